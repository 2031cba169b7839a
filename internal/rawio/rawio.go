// Package rawio reads and writes non-blocking descriptors with system
// calls made without telling the scheduler.
//
// A read or write on a non-blocking descriptor never waits, so it need not
// enter the scheduler's system-call state; entering it wakes the runtime's
// sleeping monitor thread (sysmon) through a futex, which at ten frames a
// second on fifty panes was most of a quiet program's cost.
package rawio

import (
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read reads a non-blocking descriptor once. It returns -1 and the errno
// on failure (EAGAIN when nothing is there).
func Read(fd uintptr, b []byte) (int, error) {
	r, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// Write writes a non-blocking descriptor once.
func Write(fd uintptr, b []byte) (int, error) {
	r, _, errno := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// terminalBufs lend ReadTerminal its buffer only while output is there to
// read: a terminal waiting for output holds none.
var terminalBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// ReadTerminal hands got what a non-blocking terminal master says, until
// the terminal ends or stop is set (checked after every read: closing the
// descriptor does not end a reader that is never told EAGAIN). It reads
// until EAGAIN before it waits for the poller: an edge that comes while
// the reader is being woken is folded into that wake-up, so a read that
// returned a program's last output may be the only sign left of the
// hang-up that follows it. got's slice is valid only until it returns.
// hungUp reports that the terminal ended (every process let go of it);
// false means stop was set or the wait failed (closed, a deadline).
func ReadTerminal(rc syscall.RawConn, stop *atomic.Bool, got func([]byte)) (hungUp bool) {
	_ = rc.Read(func(fd uintptr) bool {
		buf := terminalBufs.Get().(*[32 << 10]byte)
		defer terminalBufs.Put(buf)
		for {
			n, err := Read(fd, buf[:])
			if n > 0 {
				got(buf[:n])
			}
			switch {
			case stop.Load():
				return true
			case err == unix.EINTR:
			case err == unix.EAGAIN:
				return false
			case err == unix.EIO || n == 0:
				// EIO after the other side closes (Linux), 0 bytes on BSD.
				hungUp = true
				return true
			case err != nil:
				return true
			}
		}
	})
	return hungUp
}
