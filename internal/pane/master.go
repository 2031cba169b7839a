package pane

import (
	"os"

	"github.com/corral-dev/corral/internal/rawio"
)

// master is the daemon's descriptor of a pane's PTY master. One the daemon
// reads (its own PTY, or a holder's that shares its ring) is a file in the
// runtime's poller, which readLoop reads. One whose holder sends the
// output as frames is a bare descriptor kept out of the poller: registered
// here too it would wake the daemon at every frame of output for nothing
// (readiness is the terminal's, shared by both descriptors).
type master struct {
	file *os.File  // read here; nil when the holder reads
	bare *rawio.FD // when the holder reads
}

func fileMaster(f *os.File) *master { return &master{file: f} }

// roomWait bounds one wait for the terminal to take more input: Close
// waits for a write at most this long (a terminal cannot be shut down).
const roomWait = 100 // milliseconds

func bareMaster(fd int) *master { return &master{bare: rawio.NewFD(fd, roomWait)} }

// control runs f with the descriptor, kept open while it runs.
func (m *master) control(f func(fd int) error) error {
	if m.file == nil {
		return m.bare.Use(f)
	}
	rc, err := m.file.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// Write writes all of b, waiting while the program does not read.
func (m *master) Write(b []byte) (int, error) {
	if m.file != nil {
		return m.file.Write(b)
	}
	return m.bare.Write(b)
}

// Close closes the descriptor (once).
func (m *master) Close() error {
	if m.file != nil {
		return m.file.Close()
	}
	return m.bare.Close()
}
