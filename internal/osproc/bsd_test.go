package osproc

import (
	"encoding/binary"
	"slices"
	"testing"
)

func procArgsBlock(argc uint32, rest string) []byte {
	b := binary.NativeEndian.AppendUint32(nil, argc)
	return append(b, rest...)
}

func TestParseProcArgs(t *testing.T) {
	for _, c := range []struct {
		name      string
		in        []byte
		argv, env []string
		bad       bool
	}{
		{"argv and environment", procArgsBlock(2, "/bin/sleep\x00\x00\x00\x00sleep\x0060\x00HOME=/u\x00CORRAL_PANE=k3f9q\x00\x00ptr_munge=\x00"),
			[]string{"sleep", "60"}, []string{"HOME=/u", "CORRAL_PANE=k3f9q"}, false},
		{"no environment", procArgsBlock(1, "/bin/sh\x00sh\x00"), []string{"sh"}, nil, false},
		{"an empty argument", procArgsBlock(3, "/bin/echo\x00\x00echo\x00\x00x\x00A=1\x00"), []string{"echo", "", "x"}, []string{"A=1"}, false},
		{"cut short", procArgsBlock(3, "/bin/echo\x00echo\x00a"), []string{"echo"}, nil, false},
		{"no path", procArgsBlock(1, "/bin/echo"), nil, nil, true},
		{"too short", []byte{1, 0}, nil, nil, true},
	} {
		argv, env, err := parseProcArgs(c.in)
		if (err != nil) != c.bad || !slices.Equal(argv, c.argv) || !slices.Equal(env, c.env) {
			t.Errorf("%s: parseProcArgs = %q, %q, %v; want %q, %q", c.name, argv, env, err, c.argv, c.env)
		}
	}
}

func FuzzParseProcArgs(f *testing.F) {
	f.Add(procArgsBlock(2, "/bin/sleep\x00\x00sleep\x0060\x00HOME=/u\x00\x00"))
	f.Add(procArgsBlock(1<<31, "/x\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		argv, _, err := parseProcArgs(b)
		if err == nil && len(argv) > len(b) {
			t.Fatalf("%d arguments from %d bytes", len(argv), len(b))
		}
	})
}

func TestStateLetter(t *testing.T) {
	for stat, want := range map[int8]byte{sIdle: 'R', sRun: 'R', sSleep: 'S', sStop: 'T', sZombie: 'Z', 0: '?', 9: '?'} {
		if got := stateLetter(stat); got != want {
			t.Errorf("stateLetter(%d) = %c, want %c", stat, got, want)
		}
	}
}
