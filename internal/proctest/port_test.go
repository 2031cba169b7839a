package proctest

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeLoopbackAddr(t *testing.T) {
	low := ephemeralLow()
	seen := map[string]bool{}
	for range 50 {
		addr := FreeLoopbackAddr(t)
		if seen[addr] {
			t.Fatalf("%s given twice", addr)
		}
		seen[addr] = true
		_, p, err := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if err != nil || port < 10000 || port >= low {
			t.Fatalf("%s: want a port from 10000 to %d", addr, low-1)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		l.Close()
	}
}
