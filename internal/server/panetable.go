package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/safefile"
	"github.com/corral-dev/corral/internal/status"
)

// The pane table: what the daemon knows of every pane whose program runs
// under a holder, kept in the state folder so that the next daemon can
// re-adopt them (same id, name, agent, folder, size, integration tokens,
// OSC 7501 records) and, after a reboot, start them again.
const (
	tableName    = "panes.json"
	tableVersion = 1
	// tableMax bounds the file read back.
	tableMax = 16 << 20
	// tableDelay batches the writes that state changes ask for.
	tableDelay = 200 * time.Millisecond
	// tableEvery is how often the table is compared with the panes.
	tableEvery = time.Second
)

type tableFile struct {
	Version int         `json:"version"`
	Panes   []tablePane `json:"panes"`
	// Lost are panes whose holders were gone when a daemon started (a
	// reboot): corral restore starts them again.
	Lost []tablePane `json:"lost,omitempty"`
}

// tablePane is one pane of the table.
type tablePane struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Agent is the agent forced with --agent; Seen is the one last
	// recognised.
	Agent string `json:"agent,omitempty"`
	Seen  string `json:"seen_agent,omitempty"`
	// Argv is the command as the user gave it; Launch as it was started
	// (with the integration corral added).
	Argv   []string `json:"argv"`
	Launch []string `json:"launch"`
	Cwd    string   `json:"cwd"`
	// Env is what the user asked for (--env, the caller's PATH); Added is
	// what corral added (CORRAL_*, the integration's).
	Env     []string  `json:"env,omitempty"`
	Added   []string  `json:"added,omitempty"`
	Token   string    `json:"token"`
	Remove  bool      `json:"remove,omitempty"` // --rm
	Cols    int       `json:"cols"`
	Rows    int       `json:"rows"`
	Socket  string    `json:"socket"`
	Secret  string    `json:"secret"`
	Holder  int       `json:"holder_pid"`
	PID     int       `json:"pid"`
	Created time.Time `json:"created"`
	// Integration is what the launch carried for the agent's hooks.
	Integration *agents.Launch `json:"integration,omitempty"`
	// Sessions are the agent conversations corral saw, newest last.
	Sessions []sessionSeen   `json:"sessions,omitempty"`
	Records  []status.Record `json:"records,omitempty"`
	// State, Kind and Message are the pane's last known state; Since is
	// when it began, Source and Rule what decided it.
	State   string    `json:"state,omitempty"`
	Kind    string    `json:"kind,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	Source  string    `json:"source,omitempty"`
	Rule    string    `json:"rule,omitempty"`
	// Hooks is what the agent's hooks last said while it stands, and the
	// conversation they speak for: hooks are not said again.
	Hooks *detect.Standing `json:"hooks,omitempty"`
	// Policy and Worktree are the pane's permission policy and the git
	// worktree corral made for it.
	Policy   *savedPolicy   `json:"policy,omitempty"`
	Worktree *savedWorktree `json:"worktree,omitempty"`
	// Why says why a lost pane was lost.
	Why string `json:"why,omitempty"`
}

// savedPolicy is a pane's policy as it was read when the pane started:
// a policy file changed since does not change a running pane's.
type savedPolicy struct {
	Source string `json:"source"`
	Text   string `json:"text"`
}

// savedWorktree is the git worktree corral made for a pane.
type savedWorktree struct {
	Path      string `json:"path"`
	Repo      string `json:"repo"`
	Branch    string `json:"branch"`
	Base      string `json:"base"`
	NewBranch bool   `json:"new_branch,omitempty"`
}

func (a *approver) saved() *savedPolicy {
	if a == nil {
		return nil
	}
	return &savedPolicy{Source: a.policy.Source, Text: string(a.text)}
}

func (wt *worktree) saved() *savedWorktree {
	if wt == nil {
		return nil
	}
	return &savedWorktree{Path: wt.path, Repo: wt.repo, Branch: wt.branch, Base: wt.base, NewBranch: wt.newBranch}
}

// policyOf is the policy a table's pane had (nil: none, or it no
// longer reads, which is logged: its requests are then left to the person).
func (s *Server) policyOf(row tablePane) *approver {
	if row.Policy == nil {
		return nil
	}
	p, err := headless.ParsePolicy(row.Policy.Source, []byte(row.Policy.Text))
	if err != nil {
		s.opts.Logf("pane %s: its policy no longer reads (%v); its permission requests are left to you", row.ID, err)
		return nil
	}
	return &approver{policy: p, text: []byte(row.Policy.Text)}
}

// worktreeOf is the worktree a table's pane had.
func worktreeOf(row tablePane) *worktree {
	w := row.Worktree
	if w == nil || w.Path == "" || w.Repo == "" {
		return nil
	}
	wt := &worktree{path: w.Path, repo: w.Repo, branch: w.Branch, base: w.Base, newBranch: w.NewBranch}
	wt.refresh()
	return wt
}

// sessionSeen is a conversation an agent reported.
type sessionSeen struct {
	Agent string    `json:"agent"`
	ID    string    `json:"id"`
	At    time.Time `json:"at"`
}

// panes is the daemon's side of the table.
type paneTable struct {
	path string
	logf func(string, ...any)

	// unread: a table was there and could not be read, so the holders
	// it named are not known.
	unread bool

	mu   sync.Mutex // guards what follows
	lost []tablePane
	// wmu orders the writes and guards last.
	wmu   sync.Mutex
	last  []byte // the table last written
	dirty chan struct{}
	// stop ends the loop that writes the table; loopDone says it has.
	stop     chan struct{}
	stopOnce sync.Once
	loopDone chan struct{}
	started  atomic.Bool
}

func newPaneTable(stateDir string, logf func(string, ...any)) *paneTable {
	return &paneTable{path: filepath.Join(stateDir, tableName), logf: logf, dirty: make(chan struct{}, 1),
		stop: make(chan struct{}), loopDone: make(chan struct{})}
}

// load reads the table; a missing one is empty, and a corrupt one is
// set aside (renamed) with a message, never half-trusted.
func (t *paneTable) load() tableFile {
	var f tableFile
	fi, err := os.Lstat(t.path)
	if os.IsNotExist(err) {
		return f
	}
	if err != nil {
		t.unread = true
		t.logf("pane table: %v; starting without it", err)
		return f
	}
	if !fi.Mode().IsRegular() || fi.Size() > tableMax {
		t.setAside(fmt.Sprintf("not a regular file of at most %d bytes", tableMax))
		return tableFile{}
	}
	b, err := safefile.ReadOwned(t.path, tableMax)
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err == nil && f.Version != tableVersion {
		err = fmt.Errorf("version %d, this daemon reads %d", f.Version, tableVersion)
	}
	if err != nil {
		t.setAside(err.Error())
		return tableFile{}
	}
	return f
}

func (t *paneTable) setAside(why string) {
	t.unread = true
	aside := t.path + ".bad"
	_ = os.Rename(t.path, aside)
	t.logf("pane table %s: %s; set aside as %s, its panes are not adopted", t.path, why, aside)
}

// write replaces the table atomically: a temporary file, fsync, rename.
func (t *paneTable) write(f tableFile) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	f.Version = tableVersion
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return err
	}
	t.last = b
	tmp, err := os.CreateTemp(filepath.Dir(t.path), ".panes-*.json")
	if err != nil {
		return fmt.Errorf("pane table: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("pane table: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("pane table: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pane table: %w", err)
	}
	if err := os.Rename(tmp.Name(), t.path); err != nil {
		return fmt.Errorf("pane table: %w", err)
	}
	if d, err := os.Open(filepath.Dir(t.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// changed says whether f differs from the table last written.
func (t *paneTable) changed(f tableFile) bool {
	f.Version = tableVersion
	b, err := json.MarshalIndent(f, "", " ")
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return err != nil || !bytes.Equal(b, t.last)
}

// touch asks for a write soon.
func (t *paneTable) touch() {
	select {
	case t.dirty <- struct{}{}:
	default:
	}
}
