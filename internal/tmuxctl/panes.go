package tmuxctl

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// pane is the loop's record of a pane.
type pane struct {
	info Pane
	// owner is the one client whose stream of the pane's output is used:
	// a window linked into several sessions reaches each of their
	// clients; the others have the pane paused (silence), and what they
	// are sent of it all the same is ignored. nil: its client ended; a
	// client whose session has the pane adopts it.
	owner *conn
	added bool   // Added was called
	live  bool   // output goes to the Handler: no capture is in flight
	seq   uint64 // the capture in flight is this one
	// capturing: a capture is in flight (or failed: !capturing && !live,
	// captured again at the next listing).
	capturing bool
	rows      [][]byte // the capture's rows, waiting for its cursor
}

// paneIDs returns the panes' ids in order, for Handler calls in an order
// that does not change from run to run.
func (w *Watcher) paneIDs() []string {
	ids := make([]string, 0, len(w.panes))
	for id := range w.panes {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return idNumber(a) - idNumber(b) })
	return ids
}

// capture has the pane's screen captured on c, its owner; its output is
// dropped until the capture is replied. The capture first continues the
// pane's output on c: it may have been paused, by tmux (c fell behind) or
// by the watcher (as another client's pane).
func (w *Watcher) capture(p *pane, c *conn) {
	p.seq++
	p.live, p.capturing, p.rows = false, true, nil
	delete(c.off, p.info.ID)
	id := p.info.ID
	line := "refresh-client -A '" + id + ":continue' ; " +
		"capture-pane -p -e -N -t " + id + " ; " +
		"display-message -p -t " + id + " '" + cursorFormat + "'"
	err := c.send(line,
		&request{kind: reqOther, pane: id},
		&request{kind: reqCapture, pane: id, seq: p.seq},
		&request{kind: reqCursor, pane: id, seq: p.seq})
	if err != nil {
		p.capturing = false // c is ending: the pane moves when it has
	}
}

// captured completes a capture with its cursor report: the pane is Added,
// or Redrawn.
func (w *Watcher) captured(p *pane, body [][]byte) {
	p.capturing = false
	var cur cursor
	err := errors.New("no cursor report")
	if len(body) == 1 {
		cur, err = parseCursor(string(body[0]))
	}
	if err != nil {
		w.malformed.Add(1)
		w.logf("tmux %s: capturing pane %s: %v", w.srv, p.info.ID, err)
		return
	}
	screen := drawScreen(p.rows, cur)
	p.rows = nil
	p.live = true
	info := p.info
	info.Cols, info.Rows = cur.cols, cur.rows
	if !p.added {
		p.added, p.info = true, info
		w.publish(p)
		w.h.Added(info, screen)
		return
	}
	if info != p.info {
		p.info = info
		w.publish(p)
		w.h.Changed(info)
	}
	w.h.Redraw(info.ID, screen)
}

// paneFormat is list-panes' line for a pane; the separator is one tmux
// never writes in names, and the path, which could hold one, is last.
const paneFormat = "#{pane_id}\x1f#{session_id}\x1f#{session_name}\x1f#{window_index}\x1f#{pane_index}" +
	"\x1f#{pane_width}\x1f#{pane_height}\x1f#{pane_pid}\x1f#{pane_dead}\x1f#{pane_tty}" +
	"\x1f#{pane_current_command}\x1f#{pane_current_path}"

// parsePane parses a line of paneFormat.
func parsePane(b []byte) (p Pane, dead, ok bool) {
	f := strings.SplitN(string(b), "\x1f", 12)
	if len(f) != 12 || !validID([]byte(f[0]), '%') || !validID([]byte(f[1]), '$') {
		return Pane{}, false, false
	}
	n := [5]int{}
	for i, s := range []string{f[3], f[4], f[5], f[6], f[7]} {
		var err error
		if n[i], err = strconv.Atoi(s); err != nil {
			return Pane{}, false, false
		}
	}
	p = Pane{
		ID: f[0], SessionID: f[1], Session: f[2], Window: n[0], Index: n[1],
		Cols: n[2], Rows: n[3], PID: n[4], TTY: f[9], Command: f[10], Path: f[11],
	}
	p.Target = fmt.Sprintf("%s:%d.%d", p.Session, p.Window, p.Index)
	return p, f[8] == "1", true
}

// listed is a list of c's session's panes: new panes are captured (and
// Added), changed ones Changed, gone ones Closed or moved to another
// client that has them.
func (w *Watcher) listed(c *conn, body [][]byte) {
	now := make(map[string]Pane, len(body))
	var order []string
	for _, b := range body {
		info, dead, ok := parsePane(b)
		if !ok {
			w.malformed.Add(1)
			if !c.badLogged {
				c.badLogged = true
				w.logf("tmux %s: session %s: a pane line that does not parse (the first; all are counted in Malformed): %q", w.srv, c.sid, b)
			}
			continue
		}
		if dead {
			continue // remain-on-exit: its program has exited
		}
		if _, dup := now[info.ID]; !dup {
			order = append(order, info.ID)
		}
		now[info.ID] = info
	}
	c.rows = now
	for _, id := range order {
		info := now[id]
		p := w.panes[id]
		switch {
		case p == nil:
			p = &pane{info: info, owner: c}
			w.panes[id] = p
			w.capture(p, c)
		case p.owner == c:
			if info != p.info {
				p.info = info
				if p.added {
					w.publish(p)
					w.h.Changed(info)
				}
			}
			if !p.live && !p.capturing {
				w.capture(p, c)
			}
		case p.owner == nil:
			w.adopt(p, c)
		default:
			w.silence(c, id)
		}
	}
	for id := range c.off {
		if _, ok := now[id]; !ok {
			delete(c.off, id)
		}
	}
	for _, id := range w.paneIDs() {
		p := w.panes[id]
		if _, ok := now[id]; ok {
			continue
		}
		if p.owner == c || p.owner == nil && p.info.SessionID == c.sid {
			w.lose(p, c, false)
		}
	}
}

// silence has tmux send c none of the output of a pane another client
// owns: it is paused on c.
//
// NOTE: pause, not off: before tmux 3.7, refresh-client -A %N:off keeps
// the output already queued for the client, then reads it from where the
// pane's buffer no longer has it, and the server exits on a fatal error
// (tmux commit cae229cad, issue 5054). A pause discards it.
func (w *Watcher) silence(c *conn, id string) {
	if c.off[id] {
		return
	}
	c.off[id] = true
	c.send("refresh-client -A '"+id+":pause'", &request{kind: reqOther})
}

// adopt makes c the owner of p, and captures it.
func (w *Watcher) adopt(p *pane, c *conn) {
	p.owner = c
	if info, ok := c.rows[p.info.ID]; ok && info != p.info {
		p.info = info
		if p.added {
			w.publish(p)
			w.h.Changed(info)
		}
	}
	w.publish(p)
	w.capture(p, c)
}

// lose: p's owner no longer has it, its session's listing lacking it or
// its client having ended. Another client whose session has it adopts
// it; else it is Closed, or, if its client ended, kept without an owner
// until the sessions are listed.
func (w *Watcher) lose(p *pane, from *conn, ended bool) {
	for _, sid := range slices.Sorted(maps.Keys(w.conns)) {
		c := w.conns[sid]
		if c == from || !c.attached || c.isClosed() {
			continue
		}
		if _, ok := c.rows[p.info.ID]; ok {
			w.logf("tmux %s: pane %s moves to the client of session %s", w.srv, p.info.ID, sid)
			w.adopt(p, c)
			return
		}
	}
	if ended {
		p.owner, p.live, p.capturing, p.rows = nil, false, false, nil
		w.publish(p)
		w.sessWanted = true
		return
	}
	w.closePane(p)
}

// closePane forgets p, and Closes it if it was Added.
func (w *Watcher) closePane(p *pane) {
	delete(w.panes, p.info.ID)
	if !p.added {
		return
	}
	w.mu.Lock()
	delete(w.snap, p.info.ID)
	delete(w.route, p.info.ID)
	w.mu.Unlock()
	w.h.Closed(p.info.ID)
}

// publish updates what Panes and SendKeys read of an Added pane.
func (w *Watcher) publish(p *pane) {
	if !p.added {
		return
	}
	w.mu.Lock()
	w.snap[p.info.ID] = p.info
	if p.owner != nil {
		w.route[p.info.ID] = p.owner
	} else {
		delete(w.route, p.info.ID)
	}
	w.mu.Unlock()
}
