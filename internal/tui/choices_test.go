package tui

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/client"
)

// answerDaemon is a daemon that takes answers and keeps their choices.
type answerDaemon struct {
	mu      sync.Mutex
	choices []string
}

func (d *answerDaemon) start(t *testing.T) *client.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/panes/{id}/answer", func(w http.ResponseWriter, r *http.Request) {
		var req api.AnswerRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d.mu.Lock()
		d.choices = append(d.choices, r.PathValue("id")+" "+req.Choice)
		d.mu.Unlock()
		json.NewEncoder(w).Encode(api.AnswerResult{Pane: r.PathValue("id"), Keys: "k"})
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return client.New(sock)
}

func (d *answerDaemon) answered() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.choices...)
}

// run carries out a key's command, and the commands it returns, as the
// program would (a status message becomes the status line).
func run(b *Board, cmd tea.Cmd) {
	for cmd != nil {
		msg := cmd()
		if msg == nil {
			return
		}
		_, cmd = b.Update(msg)
	}
}

// A blocked pane whose prompt has choices of its own (its rule's) shows
// them by their labels above its preview; c numbers them on the status
// line and a digit answers with the one it numbers, by its name. Any
// other key leaves them unpicked, and a prompt without any says so.
func TestBoardOffersAPromptsOwnChoices(t *testing.T) {
	d := &answerDaemon{}
	board := New(d.start(t), "")
	board.width, board.height = 200, 30
	now := time.Now().UTC().Format(time.RFC3339Nano)
	notice := &api.Prompt{Rule: "notice", Answers: []string{"yes", "no", "cancel"},
		Choices: []api.Choice{{Name: "accept-edits", Label: "leave for accept edits mode and stop"}}}
	board.panes = []api.Pane{
		{ID: "aaaaa", Agent: "claude-code", State: "blocked", Kind: "question", Since: now, Prompt: notice},
		{ID: "bbbbb", Agent: "claude-code", State: "blocked", Kind: "permission", Since: now,
			Prompt: &api.Prompt{Rule: "permission", Answers: []string{"yes", "always", "no", "cancel"}, Options: true, Choices: []api.Choice{}}},
	}
	board.sel = "aaaaa"
	if out := board.View().Content; !strings.Contains(out, "takes yes, no, cancel · c: leave for accept edits mode and stop") {
		t.Fatalf("the notice's choices are not shown:\n%s", out)
	}

	_, cmd := board.Update(tea.KeyPressMsg{Code: 'c', Text: "c"})
	run(board, cmd)
	if want := "aaaaa: choose 1 leave for accept edits mode and stop (accept-edits) · esc back"; board.status != want {
		t.Fatalf("status %q, want %q", board.status, want)
	}
	_, cmd = board.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
	run(board, cmd)
	if board.choices != nil || len(d.answered()) > 0 {
		t.Fatalf("esc answered %v (choosing %v)", d.answered(), board.choices)
	}
	// Out of range: nothing answered, the choices put away.
	_, cmd = board.Update(tea.KeyPressMsg{Code: 'c', Text: "c"})
	run(board, cmd)
	_, cmd = board.Update(tea.KeyPressMsg{Code: '2', Text: "2"})
	run(board, cmd)
	if board.choices != nil || len(d.answered()) > 0 {
		t.Fatalf("2 of 1 choice answered %v", d.answered())
	}
	_, cmd = board.Update(tea.KeyPressMsg{Code: 'c', Text: "c"})
	run(board, cmd)
	_, cmd = board.Update(tea.KeyPressMsg{Code: '1', Text: "1"})
	run(board, cmd)
	if got := strings.Join(d.answered(), ","); got != "aaaaa accept-edits" {
		t.Fatalf("answered %q, want aaaaa accept-edits", got)
	}
	if board.status != "aaaaa: answered accept-edits" {
		t.Fatalf("status %q", board.status)
	}

	board.sel = "bbbbb"
	if out := board.View().Content; strings.Contains(out, "c: ") {
		t.Fatalf("a prompt without choices of its own shows some:\n%s", out)
	}
	_, cmd = board.Update(tea.KeyPressMsg{Code: 'c', Text: "c"})
	run(board, cmd)
	if board.status != "bbbbb: its prompt has no choices of its own" || board.choices != nil {
		t.Fatalf("status %q (choosing %v)", board.status, board.choices)
	}
}
