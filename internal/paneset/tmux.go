package paneset

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/safefile"
	"github.com/corral-dev/corral/internal/tmuxctl"
	"github.com/corral-dev/corral/internal/tmuxwatch"
)

// tmuxFileName is where the watched tmux servers are remembered, in the
// state folder, to be watched again by the next daemon.
const (
	tmuxFileName    = "tmux.json"
	tmuxFileVersion = 1
	tmuxFileMax     = 1 << 20
	// maxTmuxServers bounds the servers one daemon watches.
	maxTmuxServers = 64
)

// tmuxWatches are the tmux servers the daemon watches: their panes are
// the set's.
type tmuxWatches struct {
	// mu guards the fields that follow; it is never held while a watch
	// starts or closes (those run tmux).
	mu      sync.Mutex
	watches map[string]*tmuxwatch.Watch // by socket path
	// servers are the watched servers as the user named them, in the
	// order they were added (what tmux.json keeps).
	servers []tmuxSaved
}

type tmuxFile struct {
	Version int         `json:"version"`
	Servers []tmuxSaved `json:"servers"`
}

type tmuxSaved struct {
	Name   string `json:"name,omitempty"`
	Socket string `json:"socket,omitempty"`
}

func (t tmuxSaved) server() tmuxctl.Server { return tmuxctl.Server{Name: t.Name, Socket: t.Socket} }

func (s *Set[X, J]) tmuxPath() string { return filepath.Join(s.opts.StateDir, tmuxFileName) }

// WatchSavedTmux watches again the tmux servers the last daemon watched.
// A server that is not running is watched all the same: it is looked for
// until it comes back.
func (s *Set[X, J]) WatchSavedTmux() {
	b, err := safefile.ReadOwned(s.tmuxPath(), tmuxFileMax)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var f tmuxFile
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err == nil && f.Version != tmuxFileVersion {
		err = fmt.Errorf("version %d, this daemon reads %d", f.Version, tmuxFileVersion)
	}
	if err != nil {
		s.opts.Logf("tmux: %s: %v; no tmux server is watched again (watch them with corral tmux watch)", s.tmuxPath(), err)
		return
	}
	for _, saved := range f.Servers {
		if _, err := s.watchTmux(saved, false); err != nil {
			s.opts.Logf("tmux: watch %s again: %v", saved.server(), err)
		}
	}
}

// WatchTmux starts watching a tmux server (nothing when it is watched
// already) and remembers it, for the next daemon.
func (s *Set[X, J]) WatchTmux(req api.TmuxRequest) (*tmuxwatch.Watch, error) {
	return s.watchTmux(tmuxSaved(req), true)
}

// watchTmux starts watching a tmux server (nothing when it is watched
// already) and, with save, remembers it.
func (s *Set[X, J]) watchTmux(req tmuxSaved, save bool) (*tmuxwatch.Watch, error) {
	srv := req.server()
	if req.Name != "" && req.Socket != "" {
		return nil, errors.New("give a tmux server's -L NAME or its -S PATH, not both")
	}
	if strings.ContainsAny(req.Name, "/\x00") || len(req.Name) > 255 || len(req.Socket) > 4096 || strings.ContainsRune(req.Socket, 0) {
		return nil, errors.New("a tmux server's name holds no '/' and its socket is a path")
	}
	if req.Socket != "" && !filepath.IsAbs(req.Socket) {
		return nil, fmt.Errorf("the tmux socket %q is not an absolute path", req.Socket)
	}
	sock, err := srv.SocketPath()
	if err != nil {
		return nil, err
	}
	t := &s.tmux
	t.mu.Lock()
	if w := t.watches[sock]; w != nil {
		t.mu.Unlock()
		return w, nil
	}
	if len(t.watches) >= maxTmuxServers {
		t.mu.Unlock()
		return nil, fmt.Errorf("corral watches %d tmux servers already; let one go with corral tmux unwatch", maxTmuxServers)
	}
	t.mu.Unlock()
	w, err := tmuxwatch.Start(srv, tmuxwatch.Options{
		Config: s.tmuxPaneConfig,
		Added:  s.tmuxAdded,
		Failed: func(cfg pane.Config, _ error) { s.Unreserve(cfg.ID) },
		Logf:   s.opts.Logf,
	})
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if other := t.watches[sock]; other != nil || s.Closing() {
		t.mu.Unlock()
		_ = w.Close()
		if other == nil {
			return nil, errors.New("the daemon is shutting down")
		}
		return other, nil
	}
	if t.watches == nil {
		t.watches = map[string]*tmuxwatch.Watch{}
	}
	t.watches[sock] = w
	if !containsSaved(t.servers, req) {
		t.servers = append(t.servers, req)
	}
	servers := append([]tmuxSaved(nil), t.servers...)
	t.mu.Unlock()
	if save {
		s.saveTmux(servers)
	}
	return w, nil
}

func containsSaved(list []tmuxSaved, x tmuxSaved) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

// UnwatchTmux lets go of a tmux server: its panes leave corral's list
// (their programs run on in tmux), and it is forgotten.
func (s *Set[X, J]) UnwatchTmux(r api.TmuxRequest) error {
	req := tmuxSaved(r)
	sock, err := req.server().SocketPath()
	if err != nil {
		return err
	}
	t := &s.tmux
	t.mu.Lock()
	w := t.watches[sock]
	delete(t.watches, sock)
	var kept []tmuxSaved
	for _, saved := range t.servers {
		if p, err := saved.server().SocketPath(); err == nil && p == sock {
			continue
		}
		kept = append(kept, saved)
	}
	t.servers = kept
	t.mu.Unlock()
	if w == nil {
		return fmt.Errorf("tmux server %s is not watched; see corral tmux ls", req.server())
	}
	_ = w.Close()
	s.saveTmux(kept)
	// Its panes, the closed ones too, go from the list.
	for _, e := range s.Panes() {
		if e.Tmux != nil && e.Tmux.Socket() == sock {
			_ = s.Remove(e.Tmux.ID(), true)
		}
	}
	return nil
}

// StopTmux ends every watch at shutdown; the servers stay remembered.
func (s *Set[X, J]) StopTmux() {
	t := &s.tmux
	t.mu.Lock()
	watches := t.watches
	t.watches = nil
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Close()
		}()
	}
	wg.Wait()
}

// saveTmux writes the watched servers: a temporary file, then a rename.
func (s *Set[X, J]) saveTmux(servers []tmuxSaved) {
	if servers == nil {
		servers = []tmuxSaved{}
	}
	b, err := json.MarshalIndent(tmuxFile{Version: tmuxFileVersion, Servers: servers}, "", " ")
	if err == nil {
		err = safefile.WriteAtomic(s.tmuxPath(), b, 0o600)
	}
	if err != nil {
		s.opts.Logf("tmux: remember the watched servers: %v", err)
	}
}

// tmuxPaneConfig reserves an id and a name for a new tmux pane: the name
// is its target (SESSION:WINDOW.PANE), or, when a pane has that name, the
// target with the tmux pane's id.
func (s *Set[X, J]) tmuxPaneConfig(tp tmuxctl.Pane) (pane.Config, error) {
	var id string
	var err error
	var cfg pane.Config
	for _, name := range []string{tp.Target, tp.Target + "/" + tp.ID, ""} {
		if len([]rune(name)) > MaxNameLen || strings.ContainsAny(name, "\x00\n\r\t") {
			continue
		}
		id, cfg.Rules, err = s.Reserve(name)
		if err == nil {
			cfg.Name = name
			break
		}
		if s.Closing() {
			return cfg, err
		}
	}
	if err != nil {
		return cfg, err
	}
	cfg.ID = id
	cfg.Argv = []string{tp.Command}
	cfg.Dir = tp.Path
	cfg.OnChange = s.OnChange(cfg.Name)
	return cfg, nil
}

// tmuxAdded lists a new tmux pane.
func (s *Set[X, J]) tmuxAdded(p *tmuxwatch.Pane) {
	s.Register(p.ID(), &Entry[X]{P: p.Pane, Name: p.Info().Name, Tmux: p})
}

// TmuxServers lists the watched servers.
func (s *Set[X, J]) TmuxServers() []api.TmuxServer {
	t := &s.tmux
	t.mu.Lock()
	var watches []*tmuxwatch.Watch
	for _, w := range t.watches {
		watches = append(watches, w)
	}
	t.mu.Unlock()
	out := []api.TmuxServer{}
	for _, w := range watches {
		st := w.Status()
		srv := w.Server()
		row := api.TmuxServer{Name: srv.Name, Socket: w.Socket(), Running: st.Running, Sessions: st.Sessions, Panes: st.Panes,
			Skipped: w.Skipped(), Malformed: st.Malformed, Pauses: st.Pauses, Version: st.Version, Error: st.Err}
		if !st.Since.IsZero() {
			row.Since = st.Since.UTC().Format(eventlog.TimeFormat)
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Socket < out[j].Socket })
	return out
}

// FindTmux finds the pane of a watched tmux server's pane (nil: none is
// watched). The socket is as $TMUX gives it.
func (s *Set[X, J]) FindTmux(socket, paneID string) *Entry[X] {
	if socket == "" || paneID == "" {
		return nil
	}
	clean := realPath(socket)
	for _, e := range s.Panes() {
		if t := e.Tmux; t != nil && t.TmuxID == paneID && realPath(t.Socket()) == clean {
			select {
			case <-e.P.Done():
				continue // a closed pane's id is not reused, but it reports nothing
			default:
			}
			return e
		}
	}
	return nil
}

// realPath is path with its links resolved, as tmux resolves the folder of
// the socket it names in $TMUX (/tmp may be a link elsewhere); a path
// that does not resolve is only cleaned.
func realPath(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}
