package holder

// A pane's listening socket and its daemon's connection, waited for by
// the holder process's one poller instead of a goroutine each.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/rawio"
)

// thePoller is the process's poller, started with its first pane.
var thePoller = rawio.ThePoller

// watched is a bare descriptor the poller may watch: Close ends the watch
// before the descriptor (whose number may be reused at once).
type watched struct {
	*rawio.FD
	p  *rawio.Poller
	id atomic.Uint64 // 0: not watched
}

func newWatched(fd int) (*watched, error) {
	p, err := thePoller()
	if err != nil {
		return nil, err
	}
	return &watched{FD: rawio.NewFD(fd, -1), p: p}, nil
}

// watch calls fn in the poller's goroutine while the descriptor is
// readable (see rawio.Poller.Add).
func (w *watched) watch(fn func()) error {
	return w.Use(func(fd int) error {
		id, err := w.p.Add(fd, fn)
		if err == nil {
			w.id.Store(id)
		}
		return err
	})
}

func (w *watched) unwatch() {
	id := w.id.Swap(0)
	if id == 0 {
		return
	}
	if w.Use(func(fd int) error { w.p.Remove(id, fd); return nil }) != nil {
		w.p.Remove(id, -1)
	}
}

func (w *watched) Close() error {
	w.unwatch()
	return w.FD.Close()
}

// listen makes the pane's listening socket at path (only its owner may
// connect), bare and non-blocking, for the poller.
func listen(path string) (*watched, error) {
	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	defer ln.Close()
	rc, err := ln.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) { nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, err
	}
	w, err := newWatched(nfd)
	if err != nil {
		unix.Close(nfd)
		return nil, err
	}
	return w, nil
}

// watchAccept waits in the poller for connections to the pane's socket.
func (h *holder) watchAccept() {
	if err := h.ln.watch(h.acceptReady); err != nil && !errors.Is(err, os.ErrClosed) {
		h.logf("accept: %v", err)
	}
}

// acceptReady accepts every connection that waits, each proven and served
// by a goroutine of its own (serve) until it is the daemon's.
func (h *holder) acceptReady() {
	for {
		nfd := -1
		err := h.ln.Use(func(fd int) error {
			var err error
			nfd, err = acceptRaw(fd)
			return err
		})
		switch {
		case err == unix.EINTR || err == unix.ECONNABORTED:
			continue
		case err == unix.EAGAIN || errors.Is(err, os.ErrClosed):
			return
		case err != nil:
			// Out of descriptors, say: the socket stays readable, so the
			// watch waits a while rather than spin.
			h.logf("accept: %v", err)
			h.ln.unwatch()
			time.AfterFunc(100*time.Millisecond, func() {
				select {
				case <-h.finished:
				default:
					h.watchAccept()
				}
			})
			return
		}
		f := os.NewFile(uintptr(nfd), "holder connection")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			h.logf("accept: %v", err)
			continue
		}
		go h.serve(c.(*net.UnixConn))
	}
}

// watchRequests takes the requests of a daemon that reads the terminal
// itself through the poller: its connection costs nothing while it waits.
func (h *holder) watchRequests(sc *sconn, w *watched) {
	if err := w.watch(func() { h.requestsReady(sc, w) }); err != nil {
		if !errors.Is(err, os.ErrClosed) {
			h.logf("daemon connection: %v", err)
		}
		h.drop(sc)
	}
}

// requestsReady reads what the daemon sent and queues each whole request
// (runRequests); in the poller's goroutine, it never waits.
func (h *holder) requestsReady(sc *sconn, w *watched) {
	var b [512]byte
	for {
		n := 0
		err := w.Use(func(fd int) error {
			var err error
			n, err = rawio.Read(uintptr(fd), b[:])
			return err
		})
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return
		case err == nil && n == 0:
			err = io.EOF
			if len(sc.in) > 0 {
				err = io.ErrUnexpectedEOF
			}
		}
		if err != nil {
			w.unwatch()
			h.queueRequest(sc, request{err: err})
			return
		}
		sc.in = append(sc.in, b[:n]...)
		for len(sc.in) >= 5 {
			typ, size := sc.in[0], binary.BigEndian.Uint32(sc.in[1:5])
			if size > MaxFrame {
				w.unwatch()
				h.queueRequest(sc, request{err: fmt.Errorf("%w: type %q of %d bytes, the limit is %d", ErrFrame, typ, size, MaxFrame)})
				return
			}
			if len(sc.in) < 5+int(size) {
				break
			}
			h.queueRequest(sc, request{typ: typ, b: append([]byte(nil), sc.in[5:5+size]...)})
			sc.in = sc.in[5+size:]
		}
		if len(sc.in) == 0 {
			sc.in = nil
		}
	}
}

// request is one frame of the daemon's, or the error that ended its
// connection.
type request struct {
	typ byte
	b   []byte
	err error
}

// queueRequest hands r to a goroutine that acts on the connection's
// requests in order, started when none runs: a request may wait (a
// signal waits for a look at every process, shared by the panes that ask
// at once), and neither the poller nor the other panes wait for it.
func (h *holder) queueRequest(sc *sconn, r request) {
	sc.qmu.Lock()
	sc.queue = append(sc.queue, r)
	start := !sc.busy
	sc.busy = true
	sc.qmu.Unlock()
	if start {
		go h.runRequests(sc)
	}
}

func (h *holder) runRequests(sc *sconn) {
	for {
		sc.qmu.Lock()
		if len(sc.queue) == 0 || sc.over {
			sc.queue, sc.busy = nil, false
			sc.qmu.Unlock()
			return
		}
		r := sc.queue[0]
		sc.queue = sc.queue[1:]
		sc.qmu.Unlock()
		if r.err != nil {
			h.connEnded(sc, r.err)
			return
		}
		if h.request(sc, r.typ, r.b) {
			sc.qmu.Lock()
			sc.over = true
			sc.qmu.Unlock()
			if w, ok := sc.c.(*watched); ok {
				w.unwatch()
			}
		}
	}
}
