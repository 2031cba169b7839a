package holder

import (
	"os"
	"strconv"
	"syscall"
)

// readTable reads every process's parent, group, session and state.
func readTable() procTable {
	t := procTable{procs: map[int]proc{}, children: map[int][]int{}, members: map[int][]int{}}
	d, err := os.Open("/proc")
	if err != nil {
		return t
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	buf := make([]byte, 1024)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		p, ok := readStat(pid, name, buf)
		if !ok {
			continue
		}
		t.procs[pid] = p
		t.children[p.ppid] = append(t.children[p.ppid], pid)
		t.members[p.sid] = append(t.members[p.sid], pid)
		if p.pgid != p.sid {
			t.members[p.pgid] = append(t.members[p.pgid], pid)
		}
	}
	return t
}

// readStat parses "pid (comm) S ppid pgrp session …" of one process; comm
// may hold spaces and ')'. It allocates nothing: a look reads a thousand.
func readStat(pid int, name string, buf []byte) (proc, bool) {
	fd, err := syscall.Open("/proc/"+name+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return proc{}, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return proc{}, false
	}
	return parseStat(pid, buf[:n])
}
