package procs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReleaseCodePages takes this process's executable's read-only pages
// (code, read-only data) out of its page tables, and returns how many
// bytes were mapped there. The pages stay in the page cache: what the
// process uses again comes back with a minor fault. A Go process touches
// most of its binary before main (every package's initialisers, the
// command line's parsing) and keeps it mapped for its life, so each
// daemon or holder process counts megabytes of pages it no longer runs;
// proportional set sizes add up to their union. A mapping with anonymous
// (copied-on-write) pages is left alone: dropping them would bring back
// the file's contents.
func ReleaseCodePages() (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("releasing code pages: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return 0, fmt.Errorf("releasing code pages: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("releasing code pages: %w", err)
	}
	defer f.Close()
	type vma struct {
		start, end uintptr
		rss, anon  int
	}
	var found []vma
	var cur *vma
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if m, ok := mappingHeader(line); ok {
			cur = nil
			if m.readOnlyPrivate && m.inode == st.Ino && m.path == exe {
				found = append(found, vma{start: m.start, end: m.end})
				cur = &found[len(found)-1]
			}
			continue
		}
		if cur == nil {
			continue
		}
		if v, ok := smapsField(line, "Rss:"); ok {
			cur.rss = v
		} else if v, ok := smapsField(line, "Anonymous:"); ok {
			cur.anon = v
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("releasing code pages: reading /proc/self/smaps: %w", err)
	}
	released := 0
	for _, m := range found {
		if m.anon != 0 || m.rss == 0 {
			continue
		}
		// Raw: the range is no Go memory, so no []byte stands for it.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			return released, fmt.Errorf("releasing code pages %#x-%#x: %w", m.start, m.end, errno)
		}
		released += m.rss << 10
	}
	return released, nil
}

type mapping struct {
	start, end      uintptr
	readOnlyPrivate bool
	inode           uint64
	path            string
}

// mappingHeader parses a line of /proc/PID/smaps that starts a mapping:
// "start-end perms offset dev inode path".
func mappingHeader(line []byte) (mapping, bool) {
	var m mapping
	f := bytes.Fields(line)
	if len(f) < 5 {
		return m, false
	}
	dash := bytes.IndexByte(f[0], '-')
	if dash < 0 {
		return m, false
	}
	start, err1 := strconv.ParseUint(string(f[0][:dash]), 16, 64)
	end, err2 := strconv.ParseUint(string(f[0][dash+1:]), 16, 64)
	inode, err3 := strconv.ParseUint(string(f[4]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || len(f[1]) != 4 {
		return m, false
	}
	m.start, m.end, m.inode = uintptr(start), uintptr(end), inode
	m.readOnlyPrivate = f[1][0] == 'r' && f[1][1] == '-' && f[1][3] == 'p'
	if len(f) > 5 {
		// The path may hold spaces (and " (deleted)"), as readlink says it.
		i := bytes.Index(line, f[5])
		m.path = string(bytes.TrimRight(line[i:], " "))
	}
	return m, true
}

// smapsField returns the kilobytes of a "Name:   N kB" line.
func smapsField(line []byte, name string) (int, bool) {
	if !bytes.HasPrefix(line, []byte(name)) {
		return 0, false
	}
	f := bytes.Fields(line[len(name):])
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.Atoi(string(f[0]))
	return v, err == nil
}
