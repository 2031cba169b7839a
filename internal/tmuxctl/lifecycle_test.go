package tmuxctl

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A user detaching the watcher's client (detach-client, attach -d) does
// not end the session's panes: the watcher attaches again, and redraws
// them.
func TestReattachAfterUserDetach(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "alpha", "-x", "80", "-y", "24", echoLoop("detach-me"))
	r := newRecorder(t)
	w := s.watch(r, Options{})
	r.await("the pane", 10*time.Second, func() bool { return len(r.live()) == 1 })
	id := w.Panes()[0].ID
	s.must("detach-client", "-s", "alpha")
	r.await("the redraw", 5*time.Second, func() bool { return r.panes[id].redraws == 1 })
	awaitFn(t, "attached again", 5*time.Second, func() bool { return w.Status().Sessions == 1 })
	if err := w.SendKeys(id, []byte("again\r")); err != nil {
		t.Fatal(err)
	}
	r.await("the echo", 5*time.Second, func() bool { return bytes.Contains(r.panes[id].out.Bytes(), []byte("echo:again")) })
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.panes[id]; p.closed || p.added != 1 {
		t.Errorf("pane closed %v, added %d times; calls %v", p.closed, p.added, r.log)
	}
}

// With detach-on-destroy off, tmux moves the client of a killed session
// to another session, which has its own client: the moved one is
// detached, the killed session's panes are Closed, the other's stay.
func TestDetachOnDestroyOff(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "keep", "-x", "80", "-y", "24", echoLoop("keep"))
	s.must("set-option", "-g", "detach-on-destroy", "off")
	s.must("new-session", "-d", "-s", "doomed", "-x", "80", "-y", "24", "sleep 100")
	r := newRecorder(t)
	w := s.watch(r, Options{})
	r.await("two panes", 10*time.Second, func() bool { return len(r.live()) == 2 })
	keep := s.must("display-message", "-p", "-t", "keep", "#{pane_id}")
	doomed := s.must("display-message", "-p", "-t", "doomed", "#{pane_id}")
	s.must("kill-session", "-t", "doomed")
	r.await("the doomed pane closed", 5*time.Second, func() bool { return r.panes[doomed].closed })
	awaitFn(t, "one client", 5*time.Second, func() bool {
		return w.Status().Sessions == 1 && s.must("list-clients") != "" && !strings.Contains(s.must("list-clients"), "\n")
	})
	s.must("send-keys", "-t", keep, "still", "Enter")
	r.await("the echo", 5*time.Second, func() bool { return bytes.Contains(r.panes[keep].out.Bytes(), []byte("echo:still")) })
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := bytes.Count(r.panes[keep].out.Bytes(), []byte("echo:still")); n != 1 || r.panes[keep].closed {
		t.Errorf("the kept pane: echo %d times, closed %v", n, r.panes[keep].closed)
	}
}

// A server killed and started again before the watcher looks: the old
// panes are Closed and the new ones Added, though their ids are the same.
func TestServerRestartedQuickly(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "one", echoLoop("old-server"))
	r := newRecorder(t)
	s.watch(r, Options{})
	r.await("the pane", 10*time.Second, func() bool { return r.find("old-server") != nil })
	s.must("kill-server")
	// The old server may still answer as it exits, and then exit under
	// a new-session.
	awaitFn(t, "a new server", 5*time.Second, func() bool {
		_, err := s.run("new-session", "-d", "-s", "one", echoLoop("new-server"))
		return err == nil
	})
	r.await("the new server's pane", 10*time.Second, func() bool {
		p := r.find("new-server")
		return p != nil && p.added == 1
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if got := strings.Join(r.log, ","); got != "added %0,closed %0,added %0" {
		t.Errorf("calls %s; want the old %%0 closed before the new one is added", got)
	}
}

// Captures and listings keep UTF-8 and colours whatever the locale: a
// row with coloured non-ASCII text, and a directory with a non-ASCII
// name.
func TestCaptureUTF8(t *testing.T) {
	s := newServer(t)
	dir := filepath.Join(t.TempDir(), "répertoire ✻")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s.must("new-session", "-d", "-s", "utf", "-x", "80", "-y", "24", "-c", dir,
		`printf '\033[31mcafé ✻\033[0m\n'; exec sleep 100`)
	awaitFn(t, "the text", 5*time.Second, func() bool { return strings.Contains(s.must("capture-pane", "-p", "-t", "utf"), "café") })
	t.Setenv("LANG", "C")
	t.Setenv("LC_ALL", "C")
	r := newRecorder(t)
	w := s.watch(r, Options{})
	r.await("the pane", 10*time.Second, func() bool { return len(r.live()) == 1 })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.live() {
		if !bytes.Contains(p.screen, []byte("\x1b[31mcafé ✻")) {
			t.Errorf("screen %q", clip(p.screen))
		}
		real, _ := filepath.EvalSymlinks(dir)
		if p.info.Path != real {
			t.Errorf("path %q; want %q", p.info.Path, real)
		}
	}
	_ = w
}

// tmux counts an attach as activity, and `tmux attach` with no target
// takes the session most recently active: the watcher attaches the least
// recently active first, so the same session is still taken.
func TestAttachKeepsMostRecentSession(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "b-old", "sleep 100")
	old := atoi(t, s.must("display-message", "-p", "-t", "b-old", "#{session_activity}"))
	// tmux reports activity in seconds.
	awaitFn(t, "the next second", 2*time.Second, func() bool { return time.Now().Unix() > int64(old) })
	s.must("new-session", "-d", "-s", "a-new", "sleep 100")
	best := func() string { return s.must("display-message", "-p", "#{session_name}") }
	if b := best(); b != "a-new" {
		t.Fatalf("the best session before: %s", b)
	}
	r := newRecorder(t)
	w := s.watch(r, Options{})
	awaitFn(t, "two clients", 10*time.Second, func() bool { return w.Status().Sessions == 2 })
	if b := best(); b != "a-new" {
		t.Errorf("the best session after the watch attached: %s; before: a-new", b)
	}
}

// A server that stops answering (stopped with SIGSTOP) does not hang
// Close: its clients are killed after 2 s, and SendKeys times out.
func TestCloseWithServerStopped(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for timeouts; runs without -short")
	}
	s := newServer(t)
	s.must("new-session", "-d", "-s", "one", echoLoop("stopped"))
	r := newRecorder(t)
	w := s.watch(r, Options{})
	r.await("the pane", 10*time.Second, func() bool { return len(r.live()) == 1 })
	id := w.Panes()[0].ID
	pids := strings.Fields(s.must("list-clients", "-F", "#{client_pid}"))
	server := atoi(t, s.must("display-message", "-p", "#{pid}"))
	if err := syscall.Kill(server, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(server, syscall.SIGCONT) })
	start := time.Now()
	if err := w.SendKeys(id, []byte("x")); err == nil {
		t.Error("SendKeys to a stopped server: no error")
	}
	if d := time.Since(start); d > 7*time.Second {
		t.Errorf("SendKeys took %v", d)
	}
	start = time.Now()
	w.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	for _, pid := range pids {
		if err := syscall.Kill(atoi(t, pid), 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("client process %s is still there: %v", pid, err)
		}
	}
}

// A server not running is looked for; found, it is watched; killed, its
// panes are Closed; started again, it is watched again.
func TestServerGoneAndBack(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	r := newRecorder(t)
	w := s.watch(r, Options{})
	awaitFn(t, "not running", 5*time.Second, func() bool {
		st := w.Status()
		return !st.Running && strings.Contains(st.Err, "no tmux server running")
	})
	// Both panes in one command, before the watcher attaches: a tmux
	// server without the fix of tmux/tmux#4980 (3.3a here, 3.5a there)
	// crashes on a change that notifies a control client still sending
	// its identity, as the watcher's new client may be while a
	// split-window lands; the next client reads "server exited
	// unexpectedly".
	s.must("new-session", "-d", "-s", "one", echoLoop("first-life"), ";", "split-window", "-t", "one", "sleep 100")
	r.await("the first server's panes", 10*time.Second, func() bool { return len(r.live()) == 2 })
	if !w.Status().Running {
		t.Error("not running")
	}
	first := atoi(t, s.must("display-message", "-p", "#{pid}"))
	s.must("kill-server")
	r.await("every pane closed", 5*time.Second, func() bool { return len(r.live()) == 0 })
	awaitFn(t, "not running", 5*time.Second, func() bool { return !w.Status().Running })
	if st := w.Status(); st.Sessions != 0 || st.Panes != 0 {
		t.Errorf("Status after the server went: %+v", st)
	}
	// A client that reaches the first server while it is still ending
	// fails with "server exited unexpectedly": the next one starts once
	// it is gone.
	awaitFn(t, "the first server gone", 5*time.Second, func() bool { return errors.Is(syscall.Kill(first, 0), syscall.ESRCH) })
	s.must("new-session", "-d", "-s", "two", echoLoop("second-life"))
	r.await("the second server's pane", 10*time.Second, func() bool { return r.find("second-life") != nil })
	awaitFn(t, "running", 5*time.Second, func() bool { return w.Status().Running })
}

// Close detaches every control client and leaves no tmux client process.
func TestCloseLeavesNoClients(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.must("new-session", "-d", "-s", "one", "sleep 100")
	s.must("new-session", "-d", "-s", "two", "sleep 100")
	r := newRecorder(t)
	w := s.watch(r, Options{PauseAfter: 3})
	r.await("two panes", 10*time.Second, func() bool { return len(r.live()) == 2 })
	awaitFn(t, "two clients", 5*time.Second, func() bool { return w.Status().Sessions == 2 })
	clients := strings.Split(s.must("list-clients", "-F", "#{client_pid} #{client_flags}"), "\n")
	if len(clients) != 2 {
		t.Fatalf("clients: %q", clients)
	}
	var pids []int
	for _, c := range clients {
		pid, flags, _ := strings.Cut(c, " ")
		pids = append(pids, atoi(t, pid))
		for _, f := range []string{"control-mode", "ignore-size", "pause-after=3"} {
			if !strings.Contains(flags, f) {
				t.Errorf("client %s has flags %q: no %s", pid, flags, f)
			}
		}
	}
	start := time.Now()
	w.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("client process %d is still there: %v", pid, err)
		}
	}
	awaitFn(t, "no clients", 2*time.Second, func() bool { return s.must("list-clients") == "" })
	r.mu.Lock()
	n := len(r.log)
	r.mu.Unlock()
	s.must("kill-session", "-t", "one")
	s.must("new-session", "-d", "-s", "three", "sleep 100")
	r.mu.Lock()
	if len(r.log) != n {
		t.Errorf("Handler called after Close: %v", r.log[n:])
	}
	r.mu.Unlock()
	w.Close() // twice is fine
}
