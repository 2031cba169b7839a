package pane

import (
	"time"
)

// WatchQueue bounds the output chunks waiting for one watcher.
const WatchQueue = 1024

// Watcher receives a pane's raw output, for an attached terminal. A watcher
// that falls behind is dropped with a reason; the pane's output is always
// read.
type Watcher struct {
	C      chan []byte
	p      *Pane
	reason string // set when closed; guarded by p.mu
	closed bool
}

// Watch returns the screen as it is now (escape sequences that redraw it,
// with the cursor placed) and a watcher for the output that follows, with
// nothing lost in between.
func (p *Pane) Watch() (initial []byte, w *Watcher) {
	p.mu.Lock()
	return p.watchLocked()
}

// WatchWithin is Watch, giving up with ErrBusy after LockWait.
func (p *Pane) WatchWithin() (initial []byte, w *Watcher, err error) {
	if !p.mu.lockWithin(LockWait) {
		return nil, nil, ErrBusy
	}
	initial, w = p.watchLocked()
	return initial, w, nil
}

// watchLocked registers a watcher and unlocks mu.
func (p *Pane) watchLocked() (initial []byte, w *Watcher) {
	defer func() {
		p.unlock()
		p.kick()
	}()
	t := p.engine.Terminal()
	snap := t.Snapshot()
	initial = []byte("\x1b[H\x1b[2J" + t.ANSI() + "\x1b[0m")
	initial = append(initial, []byte(cursorTo(snap.CursorY+1, snap.CursorX+1))...)
	w = &Watcher{C: make(chan []byte, WatchQueue), p: p}
	if p.exited {
		w.closeLocked("the program exited")
		return initial, w
	}
	if p.watchers == nil {
		p.watchers = map[*Watcher]struct{}{}
	}
	p.watchers[w] = struct{}{}
	p.queueLocked(p.engine.MarkSeen(time.Now()))
	return initial, w
}

func cursorTo(row, col int) string {
	return "\x1b[" + itoa(row) + ";" + itoa(col) + "H"
}

func itoa(n int) string {
	if n <= 0 {
		return "1"
	}
	var b [12]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// Close stops the watcher. It never waits on a busy pane: the pane then
// drops the watcher when it can.
func (w *Watcher) Close() {
	if !w.p.mu.lockWithin(LockWait) {
		go func() {
			w.p.mu.Lock()
			defer w.p.unlock()
			w.closeLocked("")
		}()
		return
	}
	defer w.p.unlock()
	w.closeLocked("")
}

// Reason says why the pane closed the watcher ("" when its owner did).
func (w *Watcher) Reason() string {
	if !w.p.mu.lockWithin(LockWait) {
		return ErrBusy.Error()
	}
	defer w.p.unlock()
	return w.reason
}

func (w *Watcher) closeLocked(reason string) {
	if w.closed {
		return
	}
	w.closed, w.reason = true, reason
	delete(w.p.watchers, w)
	close(w.C)
}

// forwardLocked copies output to every watcher without waiting.
func (p *Pane) forwardLocked(b []byte) {
	if len(p.watchers) == 0 {
		return
	}
	chunk := append([]byte(nil), b...)
	for w := range p.watchers {
		select {
		case w.C <- chunk:
		default:
			w.closeLocked("the terminal fell too far behind the program's output")
		}
	}
}

// Notify writes bytes to every attached terminal (a bell, a notification
// sequence), as if the program had printed them, without feeding the
// pane's own screen.
func (p *Pane) Notify(b []byte) {
	if !p.mu.lockWithin(LockWait) {
		return // a bell is not worth waiting for
	}
	defer p.unlock()
	p.forwardLocked(b)
}
