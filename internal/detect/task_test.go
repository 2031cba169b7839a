package detect

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/rules"
)

// An agent that keeps its idle screen for a while after it is given a task
// (opencode opens a session first) reads working from the submit on, for
// at most its turn_start.
func TestSubmittedTaskReadsWorking(t *testing.T) {
	manifest := strings.Replace(toyManifest, `idle_confirm = "300ms"`, "idle_confirm = \"300ms\"\nturn_start = \"3s\"", 1)
	set, errs := rules.Loader{Embedded: fstest.MapFS{"toy.toml": {Data: []byte(manifest)}}}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	e := New(Config{Cols: 40, Rows: 6, Rules: set, Agent: "toy", MarkDone: true})
	defer e.Close()
	e.Feed(at(0), []byte("\r\x1b[K? for shortcuts"))
	tickUntil(e, at(100))
	kinds := func(cs []Change) string {
		var s []string
		for _, c := range cs {
			s = append(s, string(c.Decision.State)+"/"+c.Decision.Kind+"@"+c.At.Sub(t0).String())
		}
		return strings.Join(s, ",")
	}

	// A task: the idle screen reads working at once, then the agent's
	// own work, then the turn's end is done.
	e.NoteTyped()
	e.NoteSubmit(at(1000))
	if got := kinds(tickUntil(e, at(2500))); got != "working/submitted@1.02s" {
		t.Fatalf("after the submit: %s", got)
	}
	if d, _ := e.Decision(); !strings.Contains(d.Message, "waiting for toy to start it") {
		t.Fatalf("message %q", d.Message)
	}
	// The agent shows it: the same turn at work, no second event.
	e.Feed(at(2600), []byte("\r\x1b[K⠋ esc to interrupt"))
	if got := kinds(tickUntil(e, at(4900))); got != "" {
		t.Fatalf("the work shown: %s", got)
	}
	if d, _ := e.Decision(); d.State != combine.Working || d.Kind != "" || d.Rule != "spinner" {
		t.Fatalf("the work shown: %+v", d)
	}
	e.Feed(at(5000), []byte("\r\x1b[K? for shortcuts"))
	if got := kinds(tickUntil(e, at(6000))); got != "done/@5.32s" {
		t.Fatalf("the turn: %s", got)
	}
	e.MarkSeen(at(6000))

	// A task that never shows: idle again after turn_start, and no turn
	// ended (nothing to be done about).
	e.NoteTyped()
	e.NoteSubmit(at(7000))
	if got := kinds(tickUntil(e, at(12000))); got != "working/submitted@7.02s,idle/@10s" {
		t.Fatalf("a task never shown: %s", got)
	}

	// An Enter with nothing typed, or an Esc after the text, is no task.
	e.NoteSubmit(at(13000))
	e.NoteTyped()
	e.NoteInterrupt(at(14000))
	e.NoteSubmit(at(14100))
	if got := kinds(tickUntil(e, at(20000))); got != "" {
		t.Fatalf("no task: %s", got)
	}

	// With turn_start = "0s", or without an idle rule (nothing says the
	// program waits for a task: a shell), a submit changes nothing.
	for name, m := range map[string]string{
		"turn_start 0s": strings.Replace(toyManifest, `idle_confirm = "300ms"`, "idle_confirm = \"300ms\"\nturn_start = \"0s\"", 1),
		"no idle rule":  toyManifest[:strings.Index(toyManifest, "[[rule]]\nid = \"input\"")],
	} {
		set, errs := rules.Loader{Embedded: fstest.MapFS{"toy.toml": {Data: []byte(m)}}}.Load(nil)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		plain := New(Config{Cols: 40, Rows: 6, Rules: set, Agent: "toy", MarkDone: true})
		defer plain.Close()
		plain.Feed(at(0), []byte("\r\x1b[K? for shortcuts"))
		tickUntil(plain, at(100))
		plain.NoteTyped()
		plain.NoteSubmit(at(1000))
		if got := kinds(tickUntil(plain, at(5000))); got != "" {
			t.Fatalf("%s: %s", name, got)
		}
		if d, _ := plain.Decision(); d.State != combine.Idle {
			t.Fatalf("%s: %+v", name, d)
		}
	}
}

// The agent's prompt hook (working) may come before its own OSC 7501
// record says working: the task stays working, never idle in between.
// A done report after the submit ends it: a turn too quick for the
// screen.
func TestSubmittedTaskAndReports(t *testing.T) {
	set, errs := rules.Loader{Embedded: fstest.MapFS{"toy.toml": {Data: []byte(toyManifest)}}}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	e := New(Config{Cols: 40, Rows: 6, Rules: set, Agent: "toy", MarkDone: true})
	defer e.Close()
	e.Feed(at(0), []byte("\x1b]7501;state=idle\a\r\x1b[K? for shortcuts"))
	tickUntil(e, at(100))
	e.NoteTyped()
	e.NoteSubmit(at(1000))
	got := states(tickUntil(e, at(1100)))
	got += "," + states(e.ApplyHook(at(1200), Hook{State: combine.Working}))
	got += "," + states(tickUntil(e, at(1300)))
	got += "," + states(e.Feed(at(1400), []byte("\x1b]7501;state=working\a")))
	tickUntil(e, at(1500))
	got += "," + states(e.Feed(at(2000), []byte("\x1b]7501;state=done\a")))
	if got != "working@1.02s,,,,done@2s" {
		t.Fatalf("changes %s", got)
	}

	// A turn over before anything showed it: done, at once.
	e.MarkSeen(at(3000))
	e.Feed(at(3100), []byte("\x1b]7501;state=idle\a"))
	tickUntil(e, at(3200))
	e.NoteTyped()
	e.NoteSubmit(at(4000))
	tickUntil(e, at(4100))
	if got := states(e.Feed(at(4200), []byte("\x1b]7501;state=working\a\x1b]7501;state=done\a"))); got != "done@4.2s" {
		t.Fatalf("a quick turn: %s", got)
	}
}
