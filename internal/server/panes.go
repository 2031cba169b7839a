package server

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/paneset"
)

// Bounds on what a new pane's request may carry, besides MaxBody.
const (
	MaxNameLen  = paneset.MaxNameLen
	MaxArgs     = 4096
	MaxEnvVars  = 4096
	MaxFieldLen = 64 << 10
)

// checkRunFields bounds each field of a new pane's request.
func checkRunFields(req api.RunRequest) error {
	if len([]rune(req.Name)) > MaxNameLen || strings.ContainsAny(req.Name, "\x00\n\r\t") {
		return fmt.Errorf("name must be at most %d characters, on one line", MaxNameLen)
	}
	if len(req.Command) > MaxArgs || len(req.Env) > MaxEnvVars {
		return fmt.Errorf("at most %d command words and %d environment variables", MaxArgs, MaxEnvVars)
	}
	for _, f := range append(append([]string{req.Cwd}, req.Command...), req.Env...) {
		if len(f) > MaxFieldLen || strings.ContainsRune(f, 0) {
			return fmt.Errorf("a command word, environment variable or folder is longer than %d bytes or holds a NUL byte", MaxFieldLen)
		}
	}
	if req.Cols != 0 || req.Rows != 0 {
		return pane.CheckSize(req.Cols, req.Rows)
	}
	return nil
}

// killer is what kill ends: a pane's program, or a job (which any signal
// ends).
type killer interface {
	Kill(sig syscall.Signal) error
	Done() <-chan struct{}
}

func (f found) killer() killer {
	if f.job != nil {
		return f.job
	}
	return f.pane.P
}

// kill signals a pane or job and waits briefly for its end, so the
// answer shows the exit. With escalate, a program still running after
// grace is sent SIGKILL.
func kill(u killer, sig syscall.Signal, escalate bool, grace time.Duration) error {
	select {
	case <-u.Done():
		return nil // ended already: nothing to signal
	default:
	}
	if err := u.Kill(sig); err != nil {
		return err
	}
	wait := 2 * time.Second
	if escalate {
		select {
		case <-u.Done():
			return nil
		case <-time.After(grace):
		}
		if err := u.Kill(syscall.SIGKILL); err != nil {
			return err
		}
	}
	select {
	case <-u.Done():
	case <-time.After(wait):
	}
	return nil
}

// paneRow is paneJSON(e).Row(), without the rest.
func paneRow(e *entry) api.PaneRow {
	in := e.P.Brief()
	d := in.Decision
	_, problem := e.Integration(in.Agent)
	out := api.PaneRow{ID: in.ID, Name: e.Name, Agent: in.Agent, State: string(d.State), Kind: d.Kind, Message: d.Message,
		Since: in.Since.UTC().Format(eventlog.TimeFormat), Source: string(d.Source), IntegrationError: problem}
	if in.Exited {
		code := in.ExitCode
		out.ExitCode = &code
	}
	return out
}

// paneJSON is a pane as the API shows it.
func paneJSON(e *entry) api.Pane {
	in := e.P.Info()
	d := in.Decision
	integration, problem := e.Integration(in.Agent)
	out := api.Pane{ID: in.ID, Name: e.Name, Agent: in.Agent, State: string(d.State), Kind: d.Kind, Message: d.Message,
		Since: in.Since.UTC().Format(eventlog.TimeFormat), Source: string(d.Source), Rule: d.Rule, PID: in.PID,
		Cwd: in.Dir, Cols: in.Cols, Rows: in.Rows, Command: in.Argv, Foreground: in.Foreground, Records: []api.Record{},
		Integration: integration, IntegrationError: problem, HooksRefused: e.Refused.Load(), HooksIgnored: in.HooksIgnored}
	_, out.Backend = e.P.Outside()
	if t := e.Tmux; t != nil {
		out.Tmux = &api.TmuxPane{Socket: t.Socket(), Pane: t.TmuxID, Target: t.Target()}
	}
	if a := e.Ext.approve.Load(); a != nil {
		out.Policy, out.Approval = a.Source(), a.Latest()
	}
	if wt := e.Ext.worktree.Load(); wt != nil {
		out.Worktree = wt.Status()
	}
	if in.Progress >= 0 {
		v := in.Progress
		out.Progress = &v
	}
	if in.Exited {
		code := in.ExitCode
		out.ExitCode = &code
	}
	if d.State == combine.Blocked {
		out.Prompt = promptJSON(e.P.Prompt())
	}
	for _, r := range in.Records {
		rec := api.Record{ID: r.ID, State: string(r.State), Kind: string(r.Kind), App: r.App, Title: r.Title, Message: r.Msg,
			Updated: r.Updated.UTC().Format(eventlog.TimeFormat)}
		if r.Progress >= 0 {
			v := r.Progress
			rec.Progress = &v
		}
		out.Records = append(out.Records, rec)
	}
	return out
}

// promptJSON is what a blocked pane's prompt takes, as the API shows it
// (nil: no rule recognises it).
func promptJSON(pr pane.Prompt) *api.Prompt {
	if pr.Answers == nil && !pr.Options && pr.Choices == nil {
		return nil
	}
	out := &api.Prompt{Rule: pr.Rule, Answers: pr.Answers, Options: pr.Options, Choices: []api.Choice{}}
	if out.Answers == nil {
		out.Answers = []string{}
	}
	for _, c := range pr.Choices {
		out.Choices = append(out.Choices, api.Choice{Name: c.Name, Label: c.Label})
	}
	return out
}
