package holder

import (
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/rawio"
)

// connWatch is a Conn read by the process's poller (Watch).
type connWatch struct {
	p     *rawio.Poller
	id    atomic.Uint64 // 0: not watched
	got   func(Msg) bool
	ended func(error)
	once  sync.Once
}

// Watch hands got what the holder says, as Run does, but from the
// process's one poller goroutine rather than a goroutine of the caller's:
// a connection that says nothing for hours (a daemon that reads the
// terminal itself hears only the exit) costs no goroutine. got must not
// wait long: every watched connection waits for it. ended is called once,
// in a goroutine of its own, with what Run would have returned: nil when
// got returned false, io.EOF when the holder closed the connection,
// net.ErrClosed once Close is called, or the read's error. Nothing else
// may read the connection after Watch.
func (c *Conn) Watch(got func(Msg) bool, ended func(error)) error {
	p, err := thePoller()
	if err != nil {
		return err
	}
	if stop, err := c.in.deliver(got); stop || err != nil {
		go ended(err) // what the replay left in the inbox ended it
		return nil
	}
	w := &connWatch{p: p, got: got, ended: ended}
	c.w.Store(w)
	var aerr error
	if err := c.rc.Control(func(fd uintptr) {
		var id uint64
		if id, aerr = p.Add(int(fd), c.watchReady); aerr == nil {
			w.id.Store(id)
		}
	}); err != nil {
		aerr = err
	}
	if aerr != nil {
		c.w.Store(nil)
		return aerr
	}
	return nil
}

// watchReady reads what the holder sent, in the poller's goroutine.
func (c *Conn) watchReady() {
	w := c.w.Load()
	if w == nil {
		return
	}
	var stop bool
	var rerr error
	if err := c.rc.Control(func(fd uintptr) {
		for {
			room := c.in.room()
			n, err := rawio.Read(fd, room)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				c.in.idle()
				return
			case err != nil:
				rerr = err
				return
			case n == 0:
				rerr = c.in.end()
				return
			}
			c.in.w += n
			if stop, rerr = c.in.deliver(w.got); stop || rerr != nil {
				return
			}
		}
	}); err != nil {
		rerr = err
	}
	if stop || rerr != nil {
		c.endWatch(w, rerr)
	}
}

// endWatch ends the watch w (while the descriptor is open: its number may
// be another's once closed) and tells its owner, once.
func (c *Conn) endWatch(w *connWatch, err error) {
	if id := w.id.Swap(0); id != 0 {
		if c.rc.Control(func(fd uintptr) { w.p.Remove(id, int(fd)) }) != nil {
			w.p.Remove(id, -1)
		}
	}
	w.once.Do(func() { go w.ended(err) })
}

// unwatch ends a watch before the connection is closed.
func (c *Conn) unwatch() {
	if w := c.w.Load(); w != nil {
		c.endWatch(w, net.ErrClosed)
	}
}
