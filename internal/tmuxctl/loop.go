package tmuxctl

import (
	"strings"
	"time"
)

// loop is the watcher: it owns the sessions' clients and the panes, and
// calls the Handler.
func (w *Watcher) loop() {
	defer close(w.loopDone)
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	w.look()
	for {
		select {
		case <-w.quit:
			return
		case ev := <-w.events:
			w.handle(ev)
		case <-w.timer.C:
			w.due = time.Time{}
			w.look()
		case <-poll.C:
			for _, c := range w.conns {
				w.relist(c)
			}
		}
	}
}

// lookIn has look run in d, unless it is due sooner.
func (w *Watcher) lookIn(d time.Duration) {
	at := time.Now().Add(d)
	if !w.due.IsZero() && w.due.Before(at) {
		return
	}
	w.due = at
	w.timer.Reset(d)
}

// look finds the server's sessions: over a client if one is attached;
// else, if the socket answers, with one list-sessions process (at most
// one every Retry).
func (w *Watcher) look() {
	if len(w.conns) > 0 {
		w.wantSessions()
		return
	}
	if err := answers(w.sock); err != nil {
		w.serverGone(err.Error())
		w.lookIn(w.retry)
		return
	}
	if wait := time.Until(w.lastList.Add(w.retry)); wait > 0 {
		w.lookIn(wait)
		return
	}
	w.lastList = time.Now()
	server, ids, err := listSessions(w.ctx, w.tmux, w.srv)
	if w.ctx.Err() != nil {
		return
	}
	if err != nil {
		w.serverGone(err.Error())
		w.lookIn(w.retry)
		return
	}
	w.setRunning(true, "")
	w.sessions(server, ids)
	if len(ids) == 0 {
		// A server kept with exit-empty off: sessions are looked for
		// with a process every Retry.
		w.setRunning(true, "the tmux server has no sessions")
		w.lookIn(w.retry)
	}
}

// serverGone: no server answers. Every pane is Closed.
func (w *Watcher) serverGone(why string) {
	w.toAttach = nil
	for _, id := range w.paneIDs() {
		w.closePane(w.panes[id])
	}
	w.setRunning(false, why)
}

func (w *Watcher) setRunning(running bool, err string) {
	w.mu.Lock()
	changed := w.status.Running != running
	if changed {
		w.status.Running = running
		w.status.Since = time.Now()
	}
	w.status.Err = err
	w.mu.Unlock()
	switch {
	case changed && running:
		w.logf("tmux %s: server found", w.srv)
	case changed:
		w.logf("tmux %s: not running: %s", w.srv, err)
	}
}

// setSessions counts the attached clients for Status.
func (w *Watcher) setSessions() {
	n := 0
	for _, c := range w.conns {
		if c.attached {
			n++
		}
	}
	w.mu.Lock()
	w.status.Sessions = n
	w.mu.Unlock()
}

// sessions is a list of the server's sessions: a client for each that has
// none; panes whose client ended and whose session is gone are Closed.
func (w *Watcher) sessions(server string, ids []string) {
	if server != "" && w.server != "" && server != w.server {
		// A new server on the socket, found before the old one's panes
		// were let go: its ids are counted from $0 and %0 again.
		w.logf("tmux %s: the server was started again", w.srv)
		for _, id := range w.paneIDs() {
			w.closePane(w.panes[id])
		}
	}
	if server != "" {
		w.server = server
	}
	have := map[string]bool{}
	w.toAttach = w.toAttach[:0]
	for _, id := range ids {
		have[id] = true
		if w.conns[id] == nil {
			w.toAttach = append(w.toAttach, id)
		}
	}
	w.attachNext()
	for id := range w.started {
		if !have[id] {
			delete(w.started, id)
		}
	}
	for _, id := range w.paneIDs() {
		p := w.panes[id]
		if p.owner != nil {
			continue
		}
		if !have[p.info.SessionID] {
			w.closePane(p)
		} else if c := w.conns[p.info.SessionID]; c != nil {
			w.relist(c) // adopts the pane, or finds it gone
		}
	}
}

// attachNext starts the client of the next session to attach, unless one
// is attaching: one at a time, in the order listed (least recently active
// first).
//
// NOTE: tmux counts an attach as activity in the session, and `tmux
// attach` with no target picks the session most recently active: one
// attach at a time, oldest first, keeps the sessions' order.
func (w *Watcher) attachNext() {
	for w.attaching == nil && len(w.toAttach) > 0 {
		id := w.toAttach[0]
		w.toAttach = w.toAttach[1:]
		if w.conns[id] != nil {
			continue
		}
		// A session whose client has just ended (detached by a user,
		// say) is attached again, but at most once every Retry.
		if t, ok := w.started[id]; ok && time.Since(t) < w.retry {
			w.lookIn(w.retry - time.Since(t))
			continue
		}
		c, err := w.startConn(id)
		if err != nil {
			w.logf("%v", err)
			w.setRunning(true, err.Error())
			w.lookIn(w.retry)
			continue
		}
		w.conns[id] = c
		w.started[id] = c.started
		w.attaching = c
	}
}

// wantSessions has the sessions listed over a client.
func (w *Watcher) wantSessions() {
	w.sessWanted = true
	w.pumpSessions()
}

// pumpSessions sends the list-sessions wanted, if none is in flight.
func (w *Watcher) pumpSessions() {
	if !w.sessWanted || w.sessConn != nil {
		return
	}
	var c *conn
	for _, x := range w.conns {
		if x.attached && !x.isClosed() {
			c = x
			break
		}
	}
	if c == nil {
		if len(w.conns) == 0 {
			w.sessWanted = false
			w.look()
		}
		return // the clients attaching list them once attached
	}
	if c.send("list-sessions -F '"+sessionFormat+"'", &request{kind: reqSessions}) == nil {
		w.sessWanted = false
		w.sessConn = c
	}
}

// handle is one event of a client.
func (w *Watcher) handle(ev event) {
	c := ev.c
	switch ev.kind {
	case evBatch:
		for _, e := range ev.batch {
			w.handle(e)
		}
	case evOutput:
		if p := w.panes[ev.pane]; p != nil && p.owner == c && p.live {
			w.h.Output(ev.pane, ev.data)
		}
	case evReply:
		w.replied(c, ev.req)
	case evNotify:
		w.notified(c, ev.name, ev.args)
	case evAttach:
		if w.attaching == c {
			w.attaching = nil
			defer w.attachNext()
		}
		if !ev.ok {
			w.logf("tmux %s: attaching session %s: %s", w.srv, c.sid, ev.args)
			return // the client exits
		}
		c.attached = true
		w.logf("tmux %s: watching session %s", w.srv, c.sid)
		w.setRunning(true, "")
		w.setSessions()
		w.relist(c)
		// A session created between the list and the attach.
		w.wantSessions()
	case evGone:
		w.gone(c)
	}
}

// pollEvery is how often every session's panes are listed again: no
// notification says that a pane's command or directory changed, or that
// its program exited under remain-on-exit.
//
// NOTE: not a subscription (refresh-client -B), which would say so: before
// tmux 3.7 the subscription timer of a control client whose session is
// destroyed while the client still drains its output crashes the server
// (tmux commit 881bec958, issue 4916).
const pollEvery = 2 * time.Second

// notified is a notification on c.
func (w *Watcher) notified(c *conn, name, args string) {
	switch name {
	case "sessions-changed":
		w.wantSessions()
	case "layout-change", // a pane split, resized or killed
		"window-add", "window-close", "window-renamed",
		// NOTE: a window killed in c's session is reported to c as
		// %unlinked-window-close: tmux notifies once the window is gone.
		"unlinked-window-add", "unlinked-window-close",
		"session-renamed", "pane-mode-changed":
		w.relist(c)
	case "session-changed":
		// With detach-on-destroy off, a client whose session is killed
		// is moved to another: that one has its own.
		if sid, _, _ := strings.Cut(args, " "); sid != c.sid {
			w.logf("tmux %s: the client of session %s was moved to session %s; detaching it", w.srv, c.sid, sid)
			c.detach()
		}
	case "pause":
		w.paused(c, strings.TrimSpace(args))
	case "exit":
		c.exit = args
	}
}

// paused: tmux stopped sending c a pane's output, c having fallen behind.
func (w *Watcher) paused(c *conn, id string) {
	p := w.panes[id]
	if p == nil || p.owner != c {
		// Not c's to stream: it stays paused on c.
		if validID([]byte(id), '%') {
			c.off[id] = true
		}
		return
	}
	w.pauses.Add(1)
	w.logf("tmux %s: pane %s was paused (its output fell %ds behind); redrawing it", w.srv, id, w.pauseAfter)
	w.capture(p, c)
}

// relist has c's session's panes listed: one list-panes in flight per
// client, and one more after it if more was wanted meanwhile.
func (w *Watcher) relist(c *conn) {
	if !c.attached {
		return
	}
	if c.listing {
		c.again = true
		return
	}
	if c.send("list-panes -s -t '"+c.sid+"' -F '"+paneFormat+"'", &request{kind: reqList}) == nil {
		c.listing = true
	}
}

// replied is the reply to a command the loop sent on c.
func (w *Watcher) replied(c *conn, r *request) {
	switch r.kind {
	case reqList:
		c.listing = false
		if r.failed {
			if !r.closed {
				w.logf("tmux %s: listing session %s: %s", w.srv, c.sid, r.text())
			}
		} else {
			w.listed(c, r.body)
		}
		if c.again {
			c.again = false
			w.relist(c)
		}
	case reqSessions:
		if w.sessConn == c {
			w.sessConn = nil
		}
		switch {
		case r.closed:
			w.sessWanted = true // on another client
		case r.failed:
			w.logf("tmux %s: listing sessions: %s", w.srv, r.text())
		default:
			server, ids, bad := parseSessions(r.body)
			w.malformed.Add(int64(bad))
			w.sessions(server, ids)
		}
		w.pumpSessions()
	case reqCapture, reqCursor:
		p := w.panes[r.pane]
		if p == nil || p.owner != c || p.seq != r.seq || !p.capturing {
			return // a capture since, or another owner
		}
		if r.failed {
			p.capturing = false // captured again at the next listing
			if !r.closed {
				w.logf("tmux %s: capturing pane %s: %s", w.srv, r.pane, r.text())
			}
			return
		}
		if r.kind == reqCapture {
			p.rows = r.body
			return
		}
		w.captured(p, r.body)
	case reqOther:
		if r.failed && !r.closed {
			w.logf("tmux %s: session %s: %s", w.srv, c.sid, r.text())
		}
	}
}

// gone: c's client has ended (its session killed, the server gone, a
// user detached it, or Close). Its panes move to other clients that have
// them, or wait for the sessions' listing, which says whether their
// session is still there.
func (w *Watcher) gone(c *conn) {
	if w.conns[c.sid] == c {
		delete(w.conns, c.sid)
	}
	if w.attaching == c {
		w.attaching = nil
		w.attachNext()
	}
	if w.sessConn == c {
		w.sessConn = nil
		w.sessWanted = true
	}
	why := c.exit
	if why == "" {
		why = c.stderr.String()
	}
	if why == "" {
		why = "no reason given"
	}
	w.logf("tmux %s: the client of session %s ended: %s", w.srv, c.sid, why)
	for _, id := range w.paneIDs() {
		if p := w.panes[id]; p.owner == c {
			w.lose(p, c, true)
		}
	}
	w.setSessions()
	if len(w.conns) == 0 {
		w.sessWanted = false
		w.look() // a dial first: the server may be gone
		return
	}
	// The session may still be there (its client detached by a user).
	w.wantSessions()
}
