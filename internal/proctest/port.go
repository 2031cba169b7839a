package proctest

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// FreeLoopbackAddr returns a 127.0.0.1 address whose port nothing listens
// on now, for a server a test must name before it starts (a cluster's
// routes). The port is chosen at random below the kernel's range of
// ephemeral ports: a port the kernel handed out for ":0" and the test
// closed is the next one it hands out for an outgoing connection too, and
// under load (many NATS clients connecting) one of those took it before
// the server did. Within one test binary a port is given once.
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	low := ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		if portsGiven[port] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		portsGiven[port] = true
		return l.Addr().String()
	}
	t.Fatal("no free loopback port found below the ephemeral range")
	return ""
}

// ephemeralLow is the first port of the kernel's ephemeral range
// (32768 when it cannot be read, Linux's default).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				return n
			}
		}
	}
	return 32768
}
