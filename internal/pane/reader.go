package pane

// A pane's reading of its terminal. Where the process has an epoll poller
// (Linux), the terminal waits in it (rawio.Poller.AddOnce) and no
// goroutine of the pane's is parked while the program is quiet: a
// readiness hands the reading to a shared goroutine (goShared), which
// reads until the terminal would block, feeds each read in order, and
// rearms the watch. Elsewhere readLoop waits in the runtime's poller, a
// goroutine for the pane's life.

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/rawio"
)

// pollTerminals says whether a terminal the daemon reads is a bare
// descriptor watched by the process's poller (pollTerminal) rather than a
// file read by a goroutine of its own (readLoop).
const pollTerminals = runtime.GOOS == "linux"

// termRead is the state of a pane's watch in the poller.
type termRead struct {
	p     *rawio.Poller // nil: readLoop reads
	id    atomic.Uint64
	state atomic.Int32 // readArmed, readRunning, readEnded
	run   func()       // the pane's readReady, made once
}

const (
	readArmed   int32 = iota // waiting in the poller
	readRunning              // a goroutine reads
	readEnded                // readDone is closed, or about to be
)

// readBufs lend a read its buffer only while output is there to read.
var readBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// startReading starts reading the program's output, to its end or until
// stopReading.
func (p *Pane) startReading() {
	if p.ptmx.bare != nil && p.pollTerminal() {
		return
	}
	go p.readLoop()
}

// pollTerminal has the process's poller watch the terminal; false if it
// cannot.
func (p *Pane) pollTerminal() bool {
	pl, err := rawio.ThePoller()
	if err != nil {
		return false
	}
	p.rd.p = pl
	p.rd.run = p.readReady
	p.rd.state.Store(readArmed) // the first readiness may come at once
	err = p.ptmx.bare.Use(func(fd int) error {
		id, err := pl.AddOnce(fd, p.terminalReady)
		if err == nil {
			p.rd.id.Store(id)
		}
		return err
	})
	if err != nil {
		p.rd.p = nil
		return false
	}
	return true
}

// terminalReady runs in the poller's goroutine, and must not wait.
func (p *Pane) terminalReady(id uint64) {
	p.rd.id.Store(id) // may run before AddOnce returned it
	if p.rd.state.CompareAndSwap(readArmed, readRunning) {
		goShared(p.rd.run)
	}
}

// readReady reads the terminal until it would block, then rearms the
// watch; or to the terminal's end, or until stopRead.
func (p *Pane) readReady() {
	p.feeding.Add(1)
	defer p.feeding.Add(-1)
	buf := readBufs.Get().(*[32 << 10]byte)
	defer readBufs.Put(buf)
	end := false
	err := p.ptmx.bare.Use(func(fd int) error {
		for {
			n, err := rawio.Read(uintptr(fd), buf[:])
			if n > 0 {
				p.noteOutput()
				p.feedRead(buf[:n])
			}
			switch {
			case p.stopRead.Load():
				end = true
				return nil
			case err == unix.EINTR:
			case err == unix.EAGAIN:
				p.rd.state.Store(readArmed)
				// stopReading sets stopRead, then ends an armed watch:
				// one of the two sees the other.
				if p.stopRead.Load() || p.rd.p.Rearm(p.rd.id.Load(), fd) != nil {
					end = p.rd.state.CompareAndSwap(readArmed, readEnded)
				}
				return nil
			case err == unix.EIO || n == 0:
				// EIO after the other side closes (Linux), 0 bytes on BSD.
				end = true
				return nil
			case err != nil:
				end = true
				return nil
			}
		}
	})
	if err != nil {
		end = true // closed under it: nothing more to read
	}
	if end {
		p.endReading()
	}
}

// endReading ends the watch and says the output has all been read; once,
// by whoever took the watch from running or armed to ended.
func (p *Pane) endReading() {
	p.rd.state.Store(readEnded)
	id := p.rd.id.Load()
	if p.ptmx.bare.Use(func(fd int) error { p.rd.p.Remove(id, fd); return nil }) != nil {
		p.rd.p.Remove(id, -1)
	}
	close(p.readDone)
}

// stopReading ends the reading of the terminal; readDone is closed once a
// read under way has been fed.
func (p *Pane) stopReading() {
	p.stopRead.Store(true)
	switch {
	case p.rd.p != nil:
		if p.rd.state.CompareAndSwap(readArmed, readEnded) {
			p.endReading()
		}
	case p.ptmx.file != nil:
		_ = p.ptmx.file.SetReadDeadline(time.Now()) // ends its wait in the runtime's poller
	}
}

// feedRead takes one read of the program's output: the ring, the engine,
// the checkpoint, the timers, the attached terminals, then the changes'
// delivery.
func (p *Pane) feedRead(b []byte) {
	p.mu.Lock()
	if p.ring != nil {
		// Under a holder that shares its ring: before the engine, so
		// that a crash right after the read still leaves the bytes to
		// the next daemon; under the lock, so that whoever holds it
		// sees a screen made of exactly what the ring holds (see
		// checkpointLocked).
		p.ring.Append(b)
	}
	p.queueLocked(p.engine.Feed(time.Now(), b))
	p.checkpointLocked(CheckpointEvery, CheckpointGap)
	p.scheduleLocked()
	p.forwardLocked(b)
	p.unlock()
	p.kick()
}

// readMaster is the daemon's descriptor of a terminal it reads itself.
func readMaster(fd int) *master {
	if pollTerminals {
		return bareMaster(fd)
	}
	return fileMaster(newPTYFile(fd))
}
