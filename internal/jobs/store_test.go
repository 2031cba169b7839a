package jobs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/proctest"
)

// gatedJob is a Gemini-like job's options: its init line, then, once the
// file gate exists, its environment's marks as its text, and its result.
func gatedJob(gate string) headless.Options {
	script := `echo '{"type":"init","session_id":"g-1","model":"m"}'
while [ ! -e "$GATE" ]; do sleep 0.02; done
printf '{"type":"message","role":"assistant","content":"job %s of %s"}\n' "$CORRAL_JOB" "$CORRAL_SOCKET"
echo '{"type":"result","status":"success","stats":{}}'`
	return headless.Options{Agent: "gemini", Argv: []string{"sh", "-c", script}, Env: []string{"GATE=" + gate}}
}

// openGate lets a gated job go on to its end.
func openGate(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func waitDone(t *testing.T, j *Job) {
	t.Helper()
	select {
	case <-j.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("job %s did not end: %+v", j.ID(), j.Decision())
	}
}

// readRow reads a held job's row.
func readRow(t *testing.T, state, id string) jobRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "jobs", id, jobRow))
	if err != nil {
		t.Fatal(err)
	}
	var rec jobRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// A job starts held when the daemon has a state folder (its row there
// gets its outcome) and guarded when not; either way it carries its id
// and the daemon's socket in its environment, its changes are recorded
// under its id, and it ends with its outcome.
func TestStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		held bool
	}{{"held", true}, {"guarded", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			gate := filepath.Join(tmp, "gate")
			t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
			state := ""
			if tc.held {
				state = filepath.Join(tmp, "state")
			}
			var ch changes
			var ids []string
			h := New(Options{StateDir: state, Socket: "/run/corral.sock", HolderExe: os.Args[0], Logf: t.Logf,
				Record: func(id, name, agent string, c detect.Change) {
					ids = append(ids, id+"/"+name+"/"+agent)
					ch.add(c)
				}})
			fleet := &api.FleetJob{ID: "f1", From: "hub", Attempt: 1}
			j := h.Start("j1", "one", gatedJob(gate), Keep{Fleet: fleet})
			if !proctest.WaitFor(10*time.Second, func() bool { return j.Session() == "g-1" }) {
				t.Fatalf("no init line: %+v", j.Decision())
			}
			if j.HeldRunning() != tc.held {
				t.Errorf("held and running: %v, want %v", j.HeldRunning(), tc.held)
			}
			openGate(t, gate)
			waitDone(t, j)
			if out := j.Outcome(); out == nil || out.State != "done" || j.Decision().State != combine.Done || j.HeldRunning() {
				t.Fatalf("outcome %+v, state %+v", out, j.Decision())
			}
			if got, want := strings.Join(j.Snapshot().Lines, "\n"), "job j1 of /run/corral.sock"; !strings.Contains(got, want) {
				t.Errorf("screen %q, want %q in it", got, want)
			}
			if got := ch.states(); got != "done/" || strings.Join(ids, " ") != "j1/one/gemini" {
				t.Errorf("recorded %q as %v", got, ids)
			}
			if p := j.JSON(); p.Fleet != fleet || p.Backend != "headless" || p.ExitCode == nil || *p.ExitCode != 0 {
				t.Errorf("row: %+v", p)
			}
			_, err := os.Stat(filepath.Join(state, "jobs", "j1"))
			if tc.held {
				if rec := readRow(t, state, "j1"); rec.Outcome == nil || rec.Outcome.State != "done" || rec.Fleet == nil || *rec.Fleet != *fleet {
					t.Errorf("the row: %+v", rec)
				}
				if err := j.Forget(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(state, "jobs", "j1")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the forgotten job's folder: %v", err)
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a guarded job's folder: %v", err)
			}
		})
	}
}

// A held job outlives its daemon: let go at a hand-over, it is followed
// by the next daemon to its end (its events replayed quietly, its end
// recorded), and the daemon after that takes it as it ended, recording
// nothing; a job whose id the daemon's table refuses is left alone.
func TestHeldJobAcrossDaemons(t *testing.T) {
	tmp := t.TempDir()
	gate := filepath.Join(tmp, "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	state := filepath.Join(tmp, "state")
	host := func(ch *changes) *Host {
		return New(Options{StateDir: state, Socket: "/run/corral.sock", HolderExe: os.Args[0], Logf: t.Logf, Record: ch.record})
	}
	adopt := func(h *Host, refuse bool) []*Job {
		var got []*Job
		h.Adopt(func(id, name string) error {
			if refuse {
				return errors.New("taken")
			}
			return nil
		}, func(j *Job) { got = append(got, j) })
		t.Cleanup(func() {
			for _, j := range got {
				j.Close(0)
			}
		})
		return got
	}

	var first changes
	j := host(&first).Start("jh", "held", gatedJob(gate), Keep{Policy: "[[rule]]\ntool = \"Read\"\ndecision = \"allow\"\n", PolicySource: "p.toml"})
	if !proctest.WaitFor(10*time.Second, func() bool { return j.Session() == "g-1" }) {
		t.Fatalf("no init line: %+v", j.Decision())
	}
	if !j.LetGo() {
		t.Fatal("a running held job was not let go")
	}
	if rec := readRow(t, state, "jh"); rec.Outcome != nil || rec.Policy == "" {
		t.Fatalf("the row of a job let go: %+v", rec)
	}

	if got := adopt(host(&changes{}), true); len(got) != 0 {
		t.Fatalf("a refused job was registered: %v", got)
	}

	var second changes
	got := adopt(host(&second), false)
	if len(got) != 1 || got[0].ID() != "jh" || got[0].Name() != "held" || !got[0].HeldRunning() {
		t.Fatalf("followed: %v", got)
	}
	if !proctest.WaitFor(10*time.Second, func() bool { return got[0].Session() == "g-1" }) {
		t.Fatal("the followed job's journal was not read")
	}
	openGate(t, gate)
	waitDone(t, got[0])
	if out := got[0].Outcome(); out == nil || out.State != "done" {
		t.Fatalf("outcome: %+v", out)
	}
	if s := second.states(); s != "done/" {
		t.Errorf("the following daemon recorded %q", s)
	}
	if rec := readRow(t, state, "jh"); rec.Outcome == nil || rec.Outcome.State != "done" {
		t.Fatalf("the row of the ended job: %+v", rec)
	}

	var third changes
	got = adopt(host(&third), false)
	if len(got) != 1 {
		t.Fatalf("taken again: %v", got)
	}
	ended := got[0]
	select {
	case <-ended.Done():
	default:
		t.Fatal("a job that ended is taken as running")
	}
	if out := ended.Outcome(); out == nil || out.State != "done" || ended.Session() != "g-1" || ended.HeldRunning() ||
		!strings.Contains(strings.Join(ended.Snapshot().Lines, "\n"), "job jh of /run/corral.sock") {
		t.Fatalf("the ended job: %+v, session %q, screen %q", out, ended.Session(), ended.Snapshot().Lines)
	}
	if s := third.states(); s != "" {
		t.Errorf("taking an ended job recorded %q", s)
	}
	if err := ended.Forget(); err != nil {
		t.Fatal(err)
	}
	if got := adopt(host(&changes{}), false); len(got) != 0 {
		t.Fatalf("a forgotten job was taken again: %v", got)
	}
}
