//go:build !linux

package holder

import "github.com/corral-dev/corral/internal/osproc"

// readTable reads every process's parent, group, session and state,
// through the system's process table (no /proc here).
func readTable() procTable {
	t := procTable{procs: map[int]proc{}, children: map[int][]int{}, members: map[int][]int{}}
	for pid, q := range osproc.Table() {
		p := proc{pid: pid, ppid: q.PPID, pgid: q.PGID, sid: q.SID, zombie: q.State == 'Z'}
		t.procs[pid] = p
		t.children[p.ppid] = append(t.children[p.ppid], pid)
		t.members[p.sid] = append(t.members[p.sid], pid)
		if p.pgid != p.sid {
			t.members[p.pgid] = append(t.members[p.pgid], pid)
		}
	}
	return t
}
