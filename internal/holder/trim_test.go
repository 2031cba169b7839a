package holder

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// codeStart is where process pid's executable's code is mapped.
func codeStart(t *testing.T, pid int) uintptr {
	t.Helper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && fields[1] == "r-xp" && strings.Join(fields[5:], " ") == exe {
			start, err := strconv.ParseUint(strings.Split(fields[0], "-")[0], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return uintptr(start)
		}
	}
	t.Fatalf("process %d: no code mapping of %s", pid, exe)
	return 0
}

// A holder's start runs code (a request's decoding) that an idle holder
// does not: once its starts pause, that code is no longer mapped in the
// holder, so that a thousand panes' holders do not each count most of the
// binary.
func TestIdleHolderReleasesItsCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	h := startHolderProc(t)
	if r := h.start(paneConfig(dir, "code", "exec sleep 1061")); r.Error != "" {
		t.Fatalf("start: %+v", r)
	}
	pid := h.cmd.Process.Pid
	// The same executable: the code is at the same offset in both.
	decode := reflect.ValueOf(json.Unmarshal).Pointer() - codeStart(t, os.Getpid()) + codeStart(t, pid)
	if !proctest.PageMapped(t, pid, decode) {
		t.Fatal("the code that decoded the start is not mapped in the holder after the start")
	}
	if !proctest.WaitFor(trimAfter+10*time.Second, func() bool { return !proctest.PageMapped(t, pid, decode) }) {
		t.Fatal("the code that decoded the start is still mapped in the idle holder")
	}
	// It comes back when it runs again: a second start.
	if r := h.start(paneConfig(dir, "code2", "exec sleep 1062")); r.Error != "" || !proctest.PageMapped(t, pid, decode) {
		t.Fatalf("a second start (%+v): its code mapped %v", r, proctest.PageMapped(t, pid, decode))
	}
}
