package holder

import "golang.org/x/sys/unix"

// punch gives back the pages of b, a part of a ring's shared mapping:
// MADV_REMOVE punches a hole in the memfd (as fallocate PUNCH_HOLE would),
// so neither the daemon's mapping nor the holder's keeps them; they read
// as zeros until written again. A failure only leaves the memory in use.
func punch(b []byte) { _ = unix.Madvise(b, unix.MADV_REMOVE) }
