package panestore

import (
	"sync"
	"syscall"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/rules"
)

// A held pane's row carries what its start gave it, the sessions its hooks
// named (noted while the row is read), and the pane's size and state now;
// once its program has exited, it has none.
func TestHeldLive(t *testing.T) {
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p, err := pane.Start(pane.Config{ID: "h1", Argv: []string{"sh", "-c", "printf ready; exec sleep 60"}, Cols: 100, Rows: 30, Rules: set})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(time.Second)
	h := NewHeld(Row{ID: "h1", Name: "one", Token: "tok", Argv: []string{"sh"}})
	h.Keep([]Session{{Agent: "codex", ID: "old"}}, &Policy{Source: "p.toml", Text: "x"}, nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 20 {
			h.NoteSession("codex", string(rune('a'+i)), time.Now())
		}
	}()
	for range 20 {
		if _, ok := h.Live(p); !ok {
			t.Fatal("a running pane has no row")
		}
	}
	wg.Wait()
	row, ok := h.Live(p)
	if !ok || row.Name != "one" || row.Token != "tok" || row.Cols != 100 || row.Rows != 30 || row.Policy == nil || row.State == "" {
		t.Fatalf("the live row: %+v", row)
	}
	if n := len(row.Sessions); n != 8 || row.Sessions[n-1].ID != "t" {
		t.Fatalf("the sessions: %+v", row.Sessions)
	}
	row.Sessions[0].ID = "changed"
	if again, _ := h.Live(p); again.Sessions[0].ID == "changed" {
		t.Fatal("the live row shares its sessions with the held one")
	}
	if err := p.Kill(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the pane did not end")
	}
	if !proctest.WaitFor(5*time.Second, func() bool { _, ok := h.Live(p); return !ok }) {
		t.Fatal("an exited pane still has a row")
	}
}
