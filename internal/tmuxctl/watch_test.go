package tmuxctl

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
	"github.com/creack/pty"
)

// Two sessions, three panes: each Added with what it printed before the
// watch began, then its later output; the panes as tmux has them.
func TestWatchSessionsAndPanes(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "alpha", "-x", "100", "-y", "30", echoLoop("hello-before-a1"))
	s.must("split-window", "-t", "alpha", echoLoop("hello-before-a2"))
	s.must("new-session", "-d", "-s", "beta", "-x", "90", "-y", "20", echoLoop("hello-before-b1"))
	for target, marker := range map[string]string{"alpha:0.0": "hello-before-a1", "alpha:0.1": "hello-before-a2", "beta:0.0": "hello-before-b1"} {
		awaitFn(t, marker+" printed", 5*time.Second, func() bool {
			return strings.Contains(s.must("capture-pane", "-p", "-t", target), marker)
		})
	}
	r := newRecorder(t)
	w := s.watch(r, Options{})
	r.await("three panes", 10*time.Second, func() bool { return len(r.live()) == 3 })
	r.mu.Lock()
	for _, marker := range []string{"hello-before-a1", "hello-before-a2", "hello-before-b1"} {
		p := r.find(marker)
		if p == nil || !bytes.Contains(p.screen, []byte(marker)) {
			t.Errorf("no pane's screen shows %s", marker)
		}
	}
	b1 := *r.find("hello-before-b1")
	r.mu.Unlock()
	want := Pane{ID: b1.info.ID, SessionID: s.must("display-message", "-p", "-t", "beta", "#{session_id}"),
		Session: "beta", Window: 0, Index: 0, Target: "beta:0.0", Cols: 90, Rows: 20,
		PID:     atoi(t, s.must("display-message", "-p", "-t", "beta", "#{pane_pid}")),
		Command: s.must("display-message", "-p", "-t", "beta", "#{pane_current_command}"),
		Path:    s.must("display-message", "-p", "-t", "beta", "#{pane_current_path}"),
		TTY:     s.must("display-message", "-p", "-t", "beta", "#{pane_tty}")}
	if b1.info != want {
		t.Errorf("beta's pane:\n got %+v\nwant %+v", b1.info, want)
	}
	if !bytes.HasPrefix(b1.screen, []byte("\x1b[H\x1b[2J")) {
		t.Errorf("screen does not start by clearing: %q", clip(b1.screen))
	}

	r.mu.Lock()
	ids := []string{}
	for id := range r.live() {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, id := range ids {
		s.must("send-keys", "-t", id, "after-"+id, "Enter")
	}
	r.await("each pane's echo", 5*time.Second, func() bool {
		for _, id := range ids {
			if !bytes.Contains(r.panes[id].out.Bytes(), []byte("echo:after-"+id)) {
				return false
			}
		}
		return true
	})
	st := w.Status()
	v := strings.TrimPrefix(s.mustVersion(), "tmux ")
	if !st.Running || st.Sessions != 2 || st.Panes != 3 || st.Version != v || st.Server != s.srv {
		t.Errorf("Status = %+v; want running, 2 sessions, 3 panes, version %s", st, v)
	}
	if ps := w.Panes(); len(ps) != 3 {
		t.Errorf("Panes = %+v; want 3", ps)
	}
}

func (s *tserver) mustVersion() string {
	out, err := exec.Command("tmux", "-V").Output()
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Panes split, created and killed, sessions created, renamed and killed,
// a pane resized, a program's command and directory changing, all while
// watched.
func TestWatchFollowsChanges(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "alpha", "-x", "100", "-y", "30", echoLoop("m-first"))
	r := newRecorder(t)
	s.watch(r, Options{})
	r.await("the first pane", 10*time.Second, func() bool { return len(r.live()) == 1 })

	split := s.must("split-window", "-t", "alpha", "-P", "-F", "#{pane_id}", echoLoop("m-split"))
	r.await("the split pane", 5*time.Second, func() bool { p := r.panes[split]; return p != nil && !p.closed })
	win := s.must("new-window", "-d", "-t", "alpha", "-P", "-F", "#{pane_id}", echoLoop("m-window"))
	r.await("the new window's pane", 5*time.Second, func() bool { p := r.panes[win]; return p != nil && !p.closed })
	// The split pane's screen or output shows its marker, whichever the
	// capture raced.
	r.await("the split pane's marker", 5*time.Second, func() bool {
		p := r.panes[split]
		return bytes.Contains(p.screen, []byte("m-split")) || bytes.Contains(p.out.Bytes(), []byte("m-split"))
	})

	s.must("resize-pane", "-t", split, "-y", "8")
	r.await("the split pane resized", 5*time.Second, func() bool { return r.panes[split].info.Rows == 8 })

	s.must("kill-pane", "-t", split)
	r.await("the split pane closed", 5*time.Second, func() bool { return r.panes[split].closed })
	s.must("kill-window", "-t", win)
	r.await("the window's pane closed", 5*time.Second, func() bool { return r.panes[win].closed })

	s.must("new-session", "-d", "-s", "gamma", "sh", "-c", "cd /; read x; cd /tmp && exec sleep 100")
	gamma := s.must("display-message", "-p", "-t", "gamma", "#{pane_id}")
	r.await("the new session's pane", 5*time.Second, func() bool { p := r.panes[gamma]; return p != nil && !p.closed })
	s.must("rename-session", "-t", "gamma", "delta")
	r.await("the rename", 5*time.Second, func() bool {
		i := r.panes[gamma].info
		return i.Session == "delta" && i.Target == "delta:0.0"
	})
	// No notification says a program or its directory changed: the
	// watcher lists the panes again every pollEvery.
	s.must("send-keys", "-t", gamma, "Enter")
	r.await("the command and directory", 5*time.Second, func() bool {
		i := r.panes[gamma].info
		return i.Command == "sleep" && i.Path == "/tmp"
	})
	s.must("kill-session", "-t", "delta")
	r.await("the killed session's pane closed", 5*time.Second, func() bool { return r.panes[gamma].closed })

	// The program of the first pane exits: its pane (the session's
	// last) closes, and with it the server.
	r.mu.Lock()
	var first string
	for id, p := range r.live() {
		first = id
		_ = p
	}
	r.mu.Unlock()
	s.must("send-keys", "-t", first, "C-d")
	r.await("the exited program's pane closed", 5*time.Second, func() bool { return r.panes[first].closed })
}

// The watch leaves the user's window sizes as they are: detached with the
// default options, and with a real client of another size attached.
func TestWindowSizesUnchanged(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "big", "-x", "200", "-y", "50", "sleep 1000")
	s.must("new-window", "-d", "-t", "big", "sleep 1000")
	before := s.size("big:0") + " " + s.size("big:1")
	if before != "200x50 200x50" {
		t.Fatalf("sizes before: %s", before)
	}
	r := newRecorder(t)
	w := s.watch(r, Options{})
	r.await("two panes", 10*time.Second, func() bool { return len(r.live()) == 2 })
	if got := s.size("big:0") + " " + s.size("big:1"); got != before {
		t.Errorf("sizes watched: %s; before: %s", got, before)
	}
	r.mu.Lock()
	for _, p := range r.live() {
		if p.info.Cols != 200 || p.info.Rows != 50 {
			t.Errorf("pane %s is %dx%d; the window is 200x50", p.info.ID, p.info.Cols, p.info.Rows)
		}
	}
	r.mu.Unlock()
	w.Close()
	if got := s.size("big:0") + " " + s.size("big:1"); got != before {
		t.Errorf("sizes after Close: %s; before: %s", got, before)
	}

	// A user's client of 120x40 sizes the window; the watch does not.
	cmd := exec.Command("tmux", "-L", s.name, "attach-session", "-t", "big")
	cmd.Env = append(env(), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 120, Rows: 40})
	if err != nil {
		t.Fatalf("a client on a PTY: %v", err)
	}
	go io.Copy(io.Discard, ptmx)
	t.Cleanup(func() {
		ptmx.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	awaitFn(t, "the user's client to size the window", 5*time.Second, func() bool { return s.size("big:0") != "200x50" })
	withClient := s.size("big:0")
	r2 := newRecorder(t)
	w2 := s.watch(r2, Options{})
	r2.await("two panes", 10*time.Second, func() bool { return len(r2.live()) == 2 })
	s.must("new-window", "-d", "-t", "big", "sleep 1000") // a resize on a window change
	r2.await("three panes", 5*time.Second, func() bool { return len(r2.live()) == 3 })
	if got := s.size("big:0"); got != withClient {
		t.Errorf("size with a client, watched: %s; before: %s", got, withClient)
	}
	w2.Close()
	if got := s.size("big:0"); got != withClient {
		t.Errorf("size with a client, after Close: %s; before: %s", got, withClient)
	}
}

var hexRE = regexp.MustCompile(`<([0-9a-f]+)>`)

// SendKeys writes exact bytes: escape, CR, UTF-8, Ctrl-C, NUL, every
// byte value, and more than one command's worth.
func TestSendKeysExact(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s.must("new-session", "-d", "-s", "keys", "-x", "200", "-y", "50", "env TMUXCTL_TEST_HEXDUMP=1 '"+exe+"'")
	awaitFn(t, "the dumper ready", 5*time.Second, func() bool {
		return strings.Contains(s.must("capture-pane", "-p", "-t", "keys"), "ready")
	})
	r := newRecorder(t)
	w := s.watch(r, Options{})
	r.await("the pane", 10*time.Second, func() bool { return len(r.live()) == 1 })
	id := w.Panes()[0].ID

	var want []byte
	want = append(want, "\x1b\r"...)
	want = append(want, "é✻"...)
	want = append(want, 0x03, 0x00, 0x7f, 0xff)
	for i := range 256 {
		want = append(want, byte(i))
	}
	for i := range 1000 { // four commands' worth
		want = append(want, byte(i*7))
	}
	if err := w.SendKeys(id, want[:2]); err != nil {
		t.Fatal(err)
	}
	if err := w.SendKeys(id, want[2:]); err != nil {
		t.Fatal(err)
	}
	var got []byte
	r.await("the bytes dumped", 10*time.Second, func() bool {
		got = got[:0]
		for _, m := range hexRE.FindAllSubmatch(r.panes[id].out.Bytes(), -1) {
			b, _ := hex.DecodeString(string(m[1]))
			got = append(got, b...)
		}
		return len(got) >= len(want)
	})
	if !bytes.Equal(got, want) {
		t.Errorf("the pane read\n%x\nwant\n%x", got, want)
	}

	if err := w.SendKeys("%9999", []byte("x")); err == nil || !strings.Contains(err.Error(), "not watched") {
		t.Errorf("SendKeys to no pane: %v", err)
	}
	if err := w.SendKeys("nope", []byte("x")); err == nil {
		t.Error("SendKeys to a bad id: no error")
	}
	if err := w.SendKeys(id, nil); err != nil {
		t.Errorf("SendKeys of nothing: %v", err)
	}
	w.Close()
	if err := w.SendKeys(id, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("SendKeys after Close: %v", err)
	}
}

// A capture and the stream after it have nothing lost or repeated
// between them: the first number output follows the last one captured.
func TestCaptureThenStreamNoGap(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "count", "-x", "80", "-y", "10",
		`i=0; while [ $i -lt 100000 ]; do i=$((i+1)); printf '%d\n' $i; sleep 0.002; done; sleep 100`)
	awaitFn(t, "counting", 5*time.Second, func() bool { return strings.Contains(s.must("capture-pane", "-p", "-t", "count"), "20") })
	r := newRecorder(t)
	s.watch(r, Options{})
	r.await("the pane and some output", 10*time.Second, func() bool {
		for _, p := range r.live() {
			return bytes.Count(p.out.Bytes(), []byte("\n")) > 20
		}
		return false
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.live() {
		nums := regexp.MustCompile(`\d+`)
		shown := nums.FindAll(p.screen[bytes.Index(p.screen, []byte("\x1b[2J"))+4:bytes.LastIndex(p.screen, []byte("\x1b[0m"))], -1)
		if len(shown) == 0 {
			t.Fatalf("the screen shows no number: %q", p.screen)
		}
		last := atoi(t, string(shown[len(shown)-1]))
		out := p.out.String()
		first := atoi(t, nums.FindString(out))
		if first != last+1 {
			t.Errorf("the screen's last number is %d, the output's first %d (output %q)", last, first, clip([]byte(out)))
		}
		// The rest follows on, one by one.
		prev := first
		for _, n := range nums.FindAllString(out, -1)[1:] {
			if atoi(t, n) != prev+1 {
				t.Fatalf("output %d after %d", atoi(t, n), prev)
			}
			prev++
		}
	}
}

// A pane in the alternate screen is drawn in it, its cursor where the
// program left it, hidden if it was.
func TestCaptureAlternateScreen(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "alt", "-x", "80", "-y", "24",
		`printf '\033[?1049h\033[2J\033[5;10Halt-text\033[?25l'; exec sleep 100`)
	awaitFn(t, "the text", 5*time.Second, func() bool { return strings.Contains(s.must("capture-pane", "-p", "-t", "alt"), "alt-text") })
	r := newRecorder(t)
	s.watch(r, Options{})
	r.await("the pane", 10*time.Second, func() bool { return len(r.live()) == 1 })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.live() {
		sc := string(p.screen)
		if !strings.HasPrefix(sc, "\x1b[?1049h\x1b[H\x1b[2J") || !strings.Contains(sc, "alt-text") ||
			!strings.HasSuffix(sc, "\x1b[5;18H\x1b[?25l") || strings.Count(sc, "\r\n") != 23 {
			t.Errorf("screen %q", sc)
		}
	}
}

// A window linked into two sessions (a session group): its pane is
// Added once and its output delivered once; when the owning session is
// killed, the other session's client takes it over with a Redraw.
func TestLinkedWindowOwnership(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "a", "-x", "80", "-y", "24", echoLoop("linked"))
	s.must("new-session", "-d", "-s", "b", "-t", "a")
	r := newRecorder(t)
	w := s.watch(r, Options{})
	r.await("the pane", 10*time.Second, func() bool { return len(r.live()) == 1 })
	awaitFn(t, "two clients", 5*time.Second, func() bool { return w.Status().Sessions == 2 })
	id := w.Panes()[0].ID
	s.must("send-keys", "-t", id, "x1", "Enter")
	r.await("the echo", 5*time.Second, func() bool { return bytes.Contains(r.panes[id].out.Bytes(), []byte("echo:x1")) })
	owner := w.Panes()[0].Session
	other := map[string]string{"a": "b", "b": "a"}[owner]
	s.must("kill-session", "-t", owner)
	r.await("the move", 5*time.Second, func() bool {
		p := r.panes[id]
		return p.redraws == 1 && p.info.Session == other
	})
	s.must("send-keys", "-t", id, "x2", "Enter")
	r.await("the echo after the move", 5*time.Second, func() bool { return bytes.Contains(r.panes[id].out.Bytes(), []byte("echo:x2")) })
	// Give a duplicate every chance to arrive, then count.
	s.must("send-keys", "-t", id, "x3", "Enter")
	r.await("the last echo", 5*time.Second, func() bool { return bytes.Contains(r.panes[id].out.Bytes(), []byte("echo:x3")) })
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.panes[id].out.Bytes()
	for _, e := range []string{"echo:x1", "echo:x2", "echo:x3"} {
		if n := bytes.Count(out, []byte(e)); n != 1 {
			t.Errorf("%s delivered %d times", e, n)
		}
	}
	if r.panes[id].closed || r.panes[id].added != 1 {
		t.Errorf("pane closed %v, added %d times", r.panes[id].closed, r.panes[id].added)
	}
}

// Bad arguments, and tmux missing, are Watch's errors.
func TestWatchErrors(t *testing.T) {
	if _, err := Watch(Server{Name: "a", Socket: "/b"}, newRecorder(t), Options{}); err == nil {
		t.Error("both -L and -S: no error")
	}
	if _, err := Watch(Server{}, nil, Options{}); err == nil {
		t.Error("no Handler: no error")
	}
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	_, err := Watch(Server{}, newRecorder(t), Options{})
	if err == nil || !strings.Contains(err.Error(), "install tmux") {
		t.Errorf("no tmux: %v", err)
	}
	// A tmux that says its version, and nothing else.
	for _, tc := range []struct {
		v    string
		want string // the version, or an error's words
		ok   bool
	}{
		{"tmux 3.1c", "3.2 or later", false},
		{"tmux 2.9", "3.2 or later", false},
		{"tmux 3.2", "3.2", true},
		{"tmux 3.3a", "3.3a", true},
		{"tmux 3.10", "3.10", true},
		{"tmux next-3.6", "next-3.6", true},
		{"tmux 3.5-rc2", "3.5-rc2", true},
		{"tmux master", "master", true},
	} {
		script := "#!/bin/sh\necho '" + tc.v + "'\n"
		if err := proctest.WriteExecutable(filepath.Join(dir, "tmux"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		_, v, err := findTmux()
		switch {
		case tc.ok && (err != nil || v != tc.want):
			t.Errorf("%s: version %q, %v; want %q", tc.v, v, err, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v; want an error saying %q", tc.v, err, tc.want)
		}
	}
}

// A pane flooding output does not hold up another: the other's echo
// arrives within seconds, a pane paused for falling behind is redrawn,
// and nothing hangs.
func TestFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a pane for seconds; runs without -short")
	}
	// Beside the package's other tests, which wait on their tmux servers
	// more than they work: the flood's core is the one they leave.
	t.Parallel()
	s := newServer(t)
	// NOTE: the flood ends by itself: before tmux 3.7, respawn-pane -k of
	// a pane whose output is queued for a control client crashes the
	// server (tmux commit 4714f478f, issue 5498).
	s.must("new-session", "-d", "-s", "flood", "-x", "120", "-y", "40",
		"read x; timeout 3 yes 'flood flood flood flood flood flood flood flood'; exec sleep 1000")
	s.must("new-session", "-d", "-s", "calm", "-x", "80", "-y", "24", echoLoop("calm"))
	flood := s.must("display-message", "-p", "-t", "flood", "#{pane_id}")
	calm := s.must("display-message", "-p", "-t", "calm", "#{pane_id}")
	r := newRecorder(t)
	// The Handler once stalls for the flooding pane, for longer than
	// PauseAfter: its output falls behind and tmux pauses it. (A Handler
	// slow at every call, 100 µs, held the calm pane's echo 6 s behind the
	// flood's backlog: the reader is the Handler's.)
	var calls atomic.Int64
	r.slow = func(id string) {
		if id == flood {
			if calls.Add(1) == 200 {
				time.Sleep(1500 * time.Millisecond)
			}
		}
	}
	w := s.watch(r, Options{PauseAfter: 1})
	r.await("two panes", 10*time.Second, func() bool { return len(r.live()) == 2 })
	s.must("send-keys", "-t", flood, "Enter")
	r.await("the flood", 5*time.Second, func() bool { return r.panes[flood].out.Len() > 1<<20 })
	for i := range 5 {
		key := "k" + strconv.Itoa(i)
		start := time.Now()
		if err := w.SendKeys(calm, []byte(key+"\r")); err != nil {
			t.Fatal(err)
		}
		r.await("the calm pane's echo "+key, 5*time.Second, func() bool {
			return bytes.Contains(r.panes[calm].out.Bytes(), []byte("echo:"+key))
		})
		t.Logf("echo %d in %v", i, time.Since(start))
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the calm pane's echo %d took %v beside the flood", i, d)
		}
	}
	awaitFn(t, "a pause", 10*time.Second, func() bool { return w.Status().Pauses > 0 })
	awaitFn(t, "the flood's end", 10*time.Second, func() bool {
		return s.must("display-message", "-p", "-t", flood, "#{pane_current_command}") == "sleep"
	})
	r.await("a redraw for each pause", 10*time.Second, func() bool {
		return int64(r.panes[flood].redraws) == w.Status().Pauses
	})
	r.mu.Lock()
	t.Logf("status %+v, flood output %d bytes", w.Status(), r.panes[flood].out.Len())
	r.mu.Unlock()
}
