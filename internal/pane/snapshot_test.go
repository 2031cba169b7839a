package pane

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/status"
)

// claudeReady is Claude Code's screen when it waits for input.
const claudeReady = "\x1b[H\x1b[2J╭────────────────────────────╮\r\n│ >                          │\r\n╰────────────────────────────╯\r\n  ? for shortcuts\r\n"

func report(id, msg string) []byte {
	return []byte(status.Report{State: status.Working, Progress: status.NoProgress, ID: id, Msg: msg}.Encode())
}

// Every change a reader can see is published when the change completes,
// whichever goroutine made it (the feed, the clock's deadline, the hook
// loop, the end), and readers then get it at once while the pane's lock
// is held: they never wait for the pane and never see an older state.
func TestInfoIsPublishedAndNeverWaits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		agent    string
		starting bool
		// change makes the change; now says it is complete when change
		// returns (else it completes on another goroutine).
		change func(p *Pane, f *Feed)
		now    bool
		want   func(Info) bool
	}{
		{"an OSC 7501 record", "fake", false, func(_ *Pane, f *Feed) { f.Output(report("build", "compiling")) }, true,
			func(in Info) bool {
				return len(in.Records) == 1 && in.Records[0].ID == "build" && in.Records[0].Msg == "compiling"
			}},
		{"a resize", "fake", false, func(_ *Pane, f *Feed) { f.Resized(70, 14) }, true,
			func(in Info) bool { return in.Cols == 70 && in.Rows == 14 }},
		{"the end", "fake", false, func(_ *Pane, f *Feed) { f.Ended(3) }, true,
			func(in Info) bool { return in.Exited && in.ExitCode == 3 && in.Decision.State == combine.Exited }},
		{"a submitted task", "claude-code", false, func(p *Pane, f *Feed) {
			f.Output([]byte(claudeReady))
			if err := p.Input([]byte("ask\r"), false); err != nil {
				t.Error(err)
			}
		}, false, func(in Info) bool {
			return in.Decision.State == combine.Working && in.Decision.Kind == detect.KindSubmitted
		}},
		{"the submitted phase ended with no work", "claude-code", false, func(p *Pane, f *Feed) {
			f.Output([]byte(claudeReady))
			await(t, p, "idle", inState(combine.Idle))
			if err := p.Input([]byte("ask\r"), false); err != nil {
				t.Error(err)
			}
			await(t, p, "submitted", func(in Info) bool { return in.Decision.Kind == detect.KindSubmitted })
		}, false, func(in Info) bool { return in.Decision.State == combine.Idle && in.Since.After(in.Started) }},
		{"a prompt, classified at the quiet window's end", "fake", false, func(_ *Pane, f *Feed) { f.Output([]byte(fakePrompt)) }, false,
			func(in Info) bool {
				return in.Decision.State == combine.Blocked && in.Decision.Source == combine.SourceScreen && !in.PromptShown.IsZero()
			}},
		{"the starting phase ended by the ready screen", "claude-code", true, func(_ *Pane, f *Feed) { f.Output([]byte(claudeReady)) }, false,
			func(in Info) bool { return in.Decision.State == combine.Idle }},
		{"a hook", "claude-code", false, func(p *Pane, _ *Feed) {
			p.ApplyHook(detect.Hook{State: combine.Blocked, Kind: "permission", Message: "approve Bash: make"})
		}, false, func(in Info) bool {
			return in.Decision.State == combine.Blocked && in.Decision.Source == combine.SourceHook
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a case may wait out a window of its agent (its turn's start)
			p, feed, err := Open(Config{ID: "snap", Rules: ruleSet(t), Agent: tc.agent, Starting: tc.starting, Sweep: time.Hour},
				&memSource{cols: 60, rows: 12}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(time.Second)
			if tc.want(p.Info()) {
				t.Fatalf("the pane is already as the change makes it: %+v", p.Info())
			}
			tc.change(p, feed)
			if tc.now {
				if in := p.Info(); !tc.want(in) {
					t.Fatalf("right after the change: %+v", in)
				}
			} else {
				await(t, p, tc.name, tc.want)
			}
			// The read loop stuck: readers answer at once, with the state.
			p.mu.Lock()
			defer p.mu.Unlock()
			start := time.Now()
			in := p.Info()
			p.PromptAnswers()
			p.AnswerNames()
			p.HeldPrompt()
			p.PromptRegion()
			if took := time.Since(start); took > LockWait/4 {
				t.Errorf("readers took %v while the lock was held", took)
			}
			if !tc.want(in) {
				t.Fatalf("while the lock is held: %+v", in)
			}
		})
	}
}

// A snapshot is the owner's copy of nothing: changes after it was
// published leave it as it was, and a reader's changes to what Info
// returned reach neither the snapshot nor other readers. Readers run
// beside the owner for -race to see any sharing.
func TestSnapshotIsACopy(t *testing.T) {
	t.Parallel()
	p, feed, err := Open(Config{ID: "copy", Argv: []string{"agent", "--flag"}, Rules: ruleSet(t), Agent: "fake", Sweep: time.Hour},
		&memSource{cols: 60, rows: 12}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(time.Second)
	feed.Output(report("a", "one"))
	feed.Output(report("b", "two"))
	s := p.snap.Load()
	want := p.infoOf(s)
	want.Argv, want.Records = slices.Clone(want.Argv), slices.Clone(want.Records)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				in := p.Info()
				for i := range in.Records {
					in.Records[i].Msg = "reader's"
				}
				if len(in.Argv) > 0 {
					in.Argv[0] = "reader's"
				}
			}
		}()
	}
	feed.Output(report("a", "one, changed"))
	feed.Output(report("c", "three"))
	feed.Output([]byte(status.Report{State: status.Clear, Progress: status.NoProgress, ID: "b"}.Encode()))
	feed.Resized(40, 10)
	feed.Output([]byte(fakePrompt))
	await(t, p, "blocked", inState(combine.Blocked))
	close(stop)
	wg.Wait()

	if got := p.infoOf(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("a published snapshot changed:\n got %+v\nwant %+v", got, want)
	}
	in := p.Info()
	if got := in.Argv; !slices.Equal(got, []string{"agent", "--flag"}) {
		t.Fatalf("argv %q: a reader's change reached the pane", got)
	}
	var msgs []string
	for _, r := range in.Records {
		msgs = append(msgs, r.ID+"="+r.Msg)
	}
	if got := strings.Join(msgs, " "); got != "a=one, changed c=three" {
		t.Fatalf("records %s, want a=one, changed c=three", got)
	}
	if in.Cols != 40 || in.Rows != 10 {
		t.Fatalf("size %dx%d, want 40x10", in.Cols, in.Rows)
	}
}

// A pane keeps its last snapshot for its life: it holds what changes (the
// key) once, not an Info beside it, and a publication costs that alone.
func TestSnapshotBytes(t *testing.T) {
	p, _, err := Open(Config{ID: "bytes", Argv: []string{"agent"}, Rules: ruleSet(t), Agent: "fake", Sweep: time.Hour},
		&memSource{cols: 60, rows: 12}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(time.Second)
	names := []string{"one", "two"}
	publish := func(i int) {
		p.mu.Lock()
		p.name = names[i%2] // in the key: a new snapshot
		p.unlock()
	}
	publish(0)
	const n = 1000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		publish(i + 1)
	}
	runtime.ReadMemStats(&after)
	if g := p.Generation(); g < n {
		t.Fatalf("%d snapshots published, want %d or more", g, n)
	}
	per := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("a snapshot: %d bytes", per)
	if per > 512 {
		t.Fatalf("a published snapshot costs %d bytes; at most 512", per)
	}
}

// Every holder of the pane's lock lets go of it through unlock, which
// publishes: a change made under the lock and released another way would
// stay unseen by readers.
func TestLockIsReleasedThroughUnlock(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Name.Name == "unlock" {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Unlock" {
					return true
				}
				// The pane's lock is the field mu of a *Pane: p.mu, w.p.mu.
				if mu, ok := sel.X.(*ast.SelectorExpr); ok && mu.Sel.Name == "mu" && isPane(mu.X) {
					t.Errorf("%s: %s releases the pane's lock without publishing; call unlock", fset.Position(sel.Pos()), fn.Name.Name)
				}
				return true
			})
		}
	}
}

func isPane(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name == "p"
	case *ast.SelectorExpr:
		return x.Sel.Name == "p"
	}
	return false
}
