package osproc

import (
	"encoding/binary"
	"errors"
)

// What macOS's sysctls give, parsed here without a build tag so that the
// parsers are tested (and fuzzed) on every system.

// The process states of <sys/proc.h> (p_stat), which x/sys/unix does not
// name.
const (
	sIdle   = 1 // being created by fork
	sRun    = 2
	sSleep  = 3
	sStop   = 4
	sZombie = 5
)

// stateLetter names a p_stat as Linux's letters do.
func stateLetter(stat int8) byte {
	switch stat {
	case sIdle, sRun:
		return 'R'
	case sSleep:
		return 'S'
	case sStop:
		return 'T'
	case sZombie:
		return 'Z'
	}
	return '?'
}

// parseProcArgs reads what sysctl kern.procargs2 gives: argc (a 32-bit
// int in the machine's order), the executable's path, NUL padding, argc
// arguments, then the environment, each NUL-terminated, the environment
// ending at an empty string (what follows it is not the process's).
func parseProcArgs(b []byte) (argv, env []string, err error) {
	if len(b) < 4 {
		return nil, nil, errors.New("kern.procargs2 is too short")
	}
	argc := int(binary.NativeEndian.Uint32(b[:4]))
	b = b[4:]
	next := func() (string, bool) {
		for i, c := range b {
			if c == 0 {
				s := string(b[:i])
				b = b[i+1:]
				return s, true
			}
		}
		return "", false
	}
	if _, ok := next(); !ok { // the executable's path
		return nil, nil, errors.New("kern.procargs2 has no executable path")
	}
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	for len(argv) < argc {
		s, ok := next()
		if !ok {
			break
		}
		argv = append(argv, s)
	}
	for {
		s, ok := next()
		if !ok || s == "" {
			break
		}
		env = append(env, s)
	}
	return argv, env, nil
}
