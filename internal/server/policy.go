package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/autoapprove"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/config"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/safefile"
)

// A pane's approval policy is carried out by internal/autoapprove; what
// is here wires it to the pane: which policy a pane gets, the pane as the
// policy sees it, and where its decisions go.

// policyPane is a pane as its policy sees it (autoapprove.Pane): the pane
// itself, and the daemon's part of it.
type policyPane struct {
	*pane.Pane
	e *entry
}

func (p policyPane) Name() string { return p.e.Name }

func (p policyPane) HooksDecide(agent string) bool {
	in, _ := p.e.Integration(agent)
	return in == "claude-code"
}

func paneOfPolicy(e *entry) policyPane { return policyPane{Pane: e.P, e: e} }

// policyEvents is where a policy's decisions go (autoapprove.Events): the
// event log and the notifier.
type policyEvents struct{ s *Server }

func (d policyEvents) Log(ev eventlog.Event)    { d.s.logEvent(ev) }
func (d policyEvents) Notify(ev eventlog.Event) { d.s.notify.Event(ev) }

// policyTakes is told of every recorded state change: it says whether ev
// is a permission block the pane's policy has decided or is deciding, not
// to be notified (autoapprove.Approver.Takes).
func (s *Server) policyTakes(id string, ev eventlog.Event) bool {
	if !autoapprove.Concerns(ev) {
		return false
	}
	e, err := s.findPane(id) // a job's policy is its run's (headless.Options.Policy)
	if err != nil {
		return false
	}
	a := e.Ext.approve.Load()
	return a != nil && a.Takes(paneOfPolicy(e), ev)
}

// policyHeld is told of a permission prompt the pane holds back for its
// policy (autoapprove.Approver.Held); without a policy the prompt is the
// person's at once.
func (s *Server) policyHeld(id string, c detect.Change) {
	e, err := s.findPane(id)
	if err != nil {
		return
	}
	a := e.Ext.approve.Load()
	if a == nil {
		e.P.NoteUndecided()
		return
	}
	a.Held(paneOfPolicy(e), c.At)
}

// policyFor is the policy a new pane gets: the run's own, or config.toml's
// [panes] policy, or none.
func (s *Server) policyFor(req api.RunRequest) (*autoapprove.Approver, error) {
	if req.Policy != "" {
		return autoapprove.Parse(req.PolicySource, []byte(req.Policy), policyEvents{s})
	}
	file := s.opts.Config.Panes.Policy
	if req.NoPolicy || file == "" {
		return nil, nil
	}
	file = expandHome(file)
	if !filepath.IsAbs(file) {
		file = filepath.Join(filepath.Dir(config.ConfigPath()), file)
	}
	text, err := safefile.Read(file, headless.MaxPolicyBytes)
	if err != nil {
		err = fmt.Errorf("policy %s: %w", file, err)
	}
	var a *autoapprove.Approver
	if err == nil {
		a, err = autoapprove.Parse(file, text, policyEvents{s})
	}
	if err != nil {
		return nil, fmt.Errorf("config.toml's [panes] policy: %w (fix it, or run with --no-policy)", err)
	}
	return a, nil
}

// decidePermission decides a PermissionRequest hook's request by the
// pane's policy and returns the decision for the agent, or nil to leave
// it to the person; it also keeps the question the hook asked, for the
// web board.
func (s *Server) decidePermission(e *entry, rep agents.Report, payload []byte) *api.HookDecision {
	req, ok := agents.ParsePermission(payload)
	switch {
	case ok && req.Question:
		opts := req.Options
		e.Ext.question.Store(&opts)
	case ok || (!rep.Ignore && rep.State != combine.Blocked):
		e.Ext.question.Store(nil) // another request, or the agent went on
	}
	a := e.Ext.approve.Load()
	if a == nil || !ok {
		return nil
	}
	return a.DecideHook(paneOfPolicy(e), req)
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// holdForPolicy gives a pane with a policy the decision window.
func holdForPolicy(p *pane.Pane, a *autoapprove.Approver) {
	if a != nil {
		p.SetDecisionWindow(autoapprove.DecisionWindow)
	}
}
