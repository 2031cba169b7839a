package fleet

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A hub whose members' or cluster port another program holds says so at
// once, with the port, rather than waiting out HubStartWait and guessing.
func TestHubSaysAtOnceItsPortIsTaken(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().String()
	_, port, _ := net.SplitHostPort(taken)
	for _, tc := range []struct {
		name string
		o    HubOptions
	}{
		{"members' port", HubOptions{Listen: taken}},
		{"cluster port", HubOptions{Listen: proctest.FreeLoopbackAddr(t), Cluster: &ClusterOptions{Listen: taken}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Dir, o.ServerName = t.TempDir(), "hub"
			start := time.Now()
			h, err := StartHub(o)
			if err == nil {
				h.Close()
				t.Fatalf("a hub started on %s, which another listener holds", taken)
			}
			if took := time.Since(start); took > HubStartWait/3 {
				t.Errorf("the refusal took %v; the server's own error comes at once", took)
			}
			if msg := err.Error(); !strings.Contains(msg, "address already in use") || !strings.Contains(msg, port) || !strings.Contains(msg, "--cluster-listen") {
				t.Errorf("the refusal does not say the port is taken and what to do: %v", err)
			}
		})
	}
}
