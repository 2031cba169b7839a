package holder

// The holder's own reading of the terminal, into the ring (and to a
// daemon that does not read the terminal itself), while no daemon reads it.

import (
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/rawio"
)

// reader is the holder reading the terminal itself, through a duplicate
// in the poller that exists only while it reads.
type reader struct {
	f    *os.File
	stop atomic.Bool
	done chan struct{}
}

// readWithoutDaemon starts the holder's own reading if no daemon came
// within StartWait. Nothing is read before: the program's first output
// waits in the terminal rather than fall out of the ring.
func (h *holder) readWithoutDaemon() {
	select {
	case <-h.first:
	case <-time.After(StartWait):
		h.mu.Lock()
		if h.conn == nil {
			h.startReadingLocked()
		}
		h.mu.Unlock()
	}
}

// startReadingLocked starts the holder's own reading of the terminal, into
// the ring and to a daemon that does not read it itself.
func (h *holder) startReadingLocked() {
	if h.reader != nil || h.ptyGone {
		return
	}
	fd, err := unix.FcntlInt(uintptr(h.pty), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		h.logf("read the terminal: %v", err)
		return
	}
	rd := &reader{f: os.NewFile(uintptr(fd), "/dev/ptmx"), done: make(chan struct{})}
	rc, err := rd.f.SyscallConn()
	if err != nil {
		rd.f.Close()
		h.logf("read the terminal: %v", err)
		return
	}
	h.reader = rd
	go func() {
		hungUp := rawio.ReadTerminal(rc, &rd.stop, func(b []byte) {
			h.mu.Lock()
			h.ring.Append(b)
			sc := h.conn
			h.mu.Unlock()
			if sc != nil && !sc.shared {
				h.send(sc, tOutput, b)
			}
		})
		h.mu.Lock()
		if hungUp {
			h.ptyGone = true // every process of the pane has let go
		} else if !rd.stop.Load() {
			h.logf("reading the terminal stopped; the next daemon reads it")
		}
		if h.reader == rd {
			h.reader = nil
		}
		h.mu.Unlock()
		rd.f.Close() // out of the poller
		close(rd.done)
	}()
}

// end stops a reader and waits until it has: every byte it read is in
// the ring.
func (rd *reader) end() {
	rd.stop.Store(true)
	_ = rd.f.SetReadDeadline(time.Now()) // ends its wait in the poller
	<-rd.done
}
