package panestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/agentdef"
	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/holder"
)

// ResumeArgv returns argv resuming the agent's newest conversation corral
// saw, or argv unchanged and why it cannot be resumed.
func ResumeArgv(row Row) (argv []string, session, why string) {
	f := agents.Find(row.Argv)
	if f.Agent == "" {
		return row.Argv, "", "corral knows no way to resume this program; it starts fresh"
	}
	var s *Session
	for i := len(row.Sessions) - 1; i >= 0; i-- {
		if row.Sessions[i].ID != "" && (row.Sessions[i].Agent == "" || row.Sessions[i].Agent == f.Agent) {
			s = &row.Sessions[i]
			break
		}
	}
	if s == nil {
		return row.Argv, "", fmt.Sprintf("no %s conversation id was seen for this pane (its hooks reported none); it starts fresh", f.Agent)
	}
	// How to resume is the agent's data (agent.toml's [restore]).
	a, ok := agentdef.BuiltIn().ByName(f.Agent)
	if !ok || a.Restore.Resume == nil {
		return row.Argv, "", fmt.Sprintf("corral cannot resume %s conversations; it starts fresh", f.Agent)
	}
	if a.Restore.NoSubcommand && f.At < len(row.Argv) && !isFlag(row.Argv[f.At]) {
		return row.Argv, "", fmt.Sprintf("its command runs a %s subcommand, which cannot be resumed; it starts as it was", a.Binary)
	}
	if hasAny(row.Argv[f.At:], a.Restore.NamedBy...) {
		return row.Argv, "", "its command already names a conversation; it starts as it was"
	}
	var add []string
	for _, w := range a.Restore.Resume {
		add = append(add, strings.ReplaceAll(w, "{id}", s.ID))
	}
	out := slices.Concat(row.Argv[:f.At], add, row.Argv[f.At:])
	return out, s.ID, ""
}

func hasAny(args []string, flags ...string) bool {
	for _, a := range args {
		for _, f := range flags {
			if a == f || len(a) > len(f) && a[:len(f)+1] == f+"=" {
				return true
			}
		}
	}
	return false
}

func isFlag(s string) bool { return len(s) > 0 && s[0] == '-' }

// SessionOf is the conversation a hook report is about: the report's own
// session, or Codex's thread id.
func SessionOf(session string, payload json.RawMessage) string {
	if session != "" {
		return session
	}
	var p struct {
		Thread string `json:"thread-id"`
	}
	if json.Unmarshal(payload, &p) == nil {
		return p.Thread
	}
	return ""
}

// LetGo makes sure nothing holds a lost pane any more before it is
// started again, and says why not when something does: its program still
// runs, or its holder keeps it (its program ended; the holder is asked to
// let it go).
func LetGo(row Row) string {
	runs := fmt.Sprintf("its program (pid %d) still runs under its holder (pid %d), which did not let this daemon in (%s); "+
		"end the program (kill %d) to restore the pane", row.PID, row.Holder, row.Why, row.PID)
	if ProgramRuns(row) {
		return runs
	}
	pid, err := holder.Listener(row.Socket, strayWait)
	if err != nil {
		return "" // nothing listens on its socket: nothing holds it
	}
	switch err := holder.EndStray(row.Socket, true, strayWait); {
	case err == nil:
	case errors.Is(err, holder.ErrStillRuns):
		return runs
	case errors.Is(err, holder.ErrOldHolder) && HolderAlive(pid):
		// A holder of an older build holds one pane: it goes with it. Its
		// socket is removed as it ends, and must be before the pane
		// listens there again.
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for deadline := time.Now().Add(3 * time.Second); HolderAlive(pid) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if HolderAlive(pid) {
			return fmt.Sprintf("its holder (pid %d) did not end on SIGTERM; end it (kill -9 %d) to restore the pane", pid, pid)
		}
	default:
		return fmt.Sprintf("its holder (pid %d) keeps it and did not let it go (%v)", pid, err)
	}
	return ""
}

// pickLost splits the lost panes into those ids names (by id or name; all
// when ids is empty) and the others; missing are the ids that name none.
func pickLost(lost []Row, ids []string) (picked, others []Row, missing []string) {
	if len(ids) == 0 {
		return lost, nil, nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	found := map[string]bool{}
	for _, row := range lost {
		switch {
		case want[row.ID]:
			found[row.ID] = true
			picked = append(picked, row)
		case row.Name != "" && want[row.Name]:
			found[row.Name] = true
			picked = append(picked, row)
		default:
			others = append(others, row)
		}
	}
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	return picked, others, missing
}

// LostMessage is what a lost pane says in listings.
const LostMessage = "its program was lost (a reboot, or its holder killed): corral restore brings it back"

// LostPanes are the panes of the table whose programs were lost, as
// listings show them (state lost) until corral restore starts them again
// or forgets them.
func (t *Store) LostPanes() []api.Pane {
	lost := t.Lost()
	out := make([]api.Pane, 0, len(lost))
	for _, row := range lost {
		agent := row.Seen
		if agent == "" {
			agent = row.Agent
		}
		since := row.Since
		if since.IsZero() {
			since = row.Created
		}
		msg := LostMessage
		if row.Why != "" {
			msg = "lost: " + row.Why + "; corral restore brings it back"
		}
		out = append(out, api.Pane{ID: row.ID, Name: row.Name, Agent: agent, State: StateLost, Message: msg,
			Since: since.UTC().Format(eventlog.TimeFormat), Source: "process", Cwd: row.Cwd, Cols: row.Cols, Rows: row.Rows,
			Command: append([]string(nil), row.Argv...), Records: []api.Record{}, Backend: "held"})
	}
	return out
}

// StateLost is the state of a pane whose program was lost; only listings
// show it (no event is in it).
const StateLost = "lost"
