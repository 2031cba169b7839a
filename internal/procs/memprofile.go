package procs

import (
	"os"
	"runtime"
	"strings"
)

// StopMemProfile turns the heap profile's sampling off, unless GODEBUG
// names memprofilerate (the way to measure a daemon's heap). Each sampled
// allocation's stack gets a record kept for the process's life, hashed
// into a 1.4 MB table whose pages the records touch at random: at 300
// panes the daemon had 0.33 MB of it resident, a holder 0.1 MB, for
// profiles nobody reads but when measuring (a holder serves none). Called
// first thing: what was sampled before stays.
func StopMemProfile() {
	if stopsMemProfile(os.Getenv("GODEBUG")) {
		runtime.MemProfileRate = 0
	}
}

func stopsMemProfile(godebug string) bool {
	for _, kv := range strings.Split(godebug, ",") {
		if strings.HasPrefix(strings.TrimSpace(kv), "memprofilerate=") {
			return false
		}
	}
	return true
}
