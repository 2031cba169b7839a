package procs

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"regexp/syntax"
	"testing"

	"github.com/corral-dev/corral/internal/proctest"
)

// exeResident is the resident kilobytes of this process's executable's
// read-only mappings, read from /proc/self/smaps.
func exeResident(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if m, ok := mappingHeader(line); ok {
			in = m.readOnlyPrivate && m.path == exe
			continue
		}
		if v, ok := smapsField(line, "Rss:"); ok && in {
			total += v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

func TestReleaseCodePages(t *testing.T) {
	// Code that nothing else here runs: the regexp compiler's parser.
	compile := func() {
		regexp.MustCompile(`^(a+|b*)[[:alpha:]]\p{Greek}{2,5}$`)
	}
	code := reflect.ValueOf(syntax.Parse).Pointer()
	compile()
	before := exeResident(t)
	if !proctest.PageMapped(t, os.Getpid(), code) {
		t.Fatal("the parser's code is not resident after it ran")
	}
	released, err := ReleaseCodePages()
	if err != nil {
		t.Fatal(err)
	}
	// Reading smaps runs some of the binary again, which comes back: less
	// than was released.
	after := exeResident(t)
	t.Logf("executable's read-only pages: %d kB resident, %d kB released, %d kB after", before, released>>10, after)
	if released>>10 < before/2 || after >= before {
		t.Errorf("executable's read-only pages: %d kB before, %d kB released, %d kB after", before, released>>10, after)
	}
	if proctest.PageMapped(t, os.Getpid(), code) {
		t.Error("the parser's code is still resident after its pages were released")
	}
	// What was released comes back from the file when it runs again.
	compile()
	if !proctest.PageMapped(t, os.Getpid(), code) {
		t.Error("the parser's code did not come back when it ran again")
	}
}

func TestMappingHeader(t *testing.T) {
	for _, c := range []struct {
		line   string
		ok, ro bool
		path   string
		start  uintptr
		inode  uint64
	}{
		{"00400000-00f48000 r-xp 00000000 fd:01 1234 /usr/bin/corral", true, true, "/usr/bin/corral", 0x400000, 1234},
		{"00f48000-01a99000 r--p 00b47000 fd:01 1234 /tmp/a b/corral (deleted)", true, true, "/tmp/a b/corral (deleted)", 0xf48000, 1234},
		{"01a99000-01b78000 rw-p 01698000 fd:01 1234 /usr/bin/corral", true, false, "/usr/bin/corral", 0x1a99000, 1234},
		{"7f0000000000-7f0000001000 r--s 00000000 00:01 99 /memfd:corral-ring (deleted)", true, false, "/memfd:corral-ring (deleted)", 0x7f0000000000, 99},
		{"7ffd74296000-7ffd742b7000 rw-p 00000000 00:00 0                          [stack]", true, false, "[stack]", 0x7ffd74296000, 0},
		{"d50ac000000-d50aec00000 ---p 00000000 00:00 0 ", true, false, "", 0xd50ac000000, 0},
		{"Rss:                 152 kB", false, false, "", 0, 0},
		{"VmFlags: rd ex mr mw me", false, false, "", 0, 0},
	} {
		m, ok := mappingHeader([]byte(c.line))
		if ok != c.ok || m.readOnlyPrivate != c.ro || m.path != c.path || m.start != c.start || m.inode != c.inode {
			t.Errorf("%q: got ok %v %+v, want ok %v, read-only private %v, path %q, start %#x, inode %d", c.line, ok, m, c.ok, c.ro, c.path, c.start, c.inode)
		}
	}
}
