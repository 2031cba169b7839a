package proctest

import (
	"os"
	"syscall"
)

// WriteExecutable writes a program a test runs (a script standing in for an
// agent, a tool on PATH) as os.WriteFile does, with no fork of this process
// while the file is open. The trap it avoids: every child forked while a file
// is open for writing holds it until the child execs, and running the
// program then fails with "text file busy" (ETXTBSY, go.dev/issue/22315); a
// test package whose tests start processes in parallel meets that under load.
// Forks hold syscall.ForkLock for writing, so holding it for reading from
// open to close keeps them out.
func WriteExecutable(path string, data []byte, perm os.FileMode) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, data, perm)
}
