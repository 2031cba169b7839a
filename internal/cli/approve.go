package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/approval"
	"github.com/corral-dev/corral/internal/config"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/spf13/pflag"
)

// worktreeFlag is --worktree with an optional branch: alone it is on,
// --worktree=BRANCH names the branch (and run takes --worktree BRANCH).
type worktreeFlag struct {
	on     bool
	branch string
}

func (w *worktreeFlag) String() string { return w.branch }
func (w *worktreeFlag) Type() string   { return "string" }
func (w *worktreeFlag) Set(v string) error {
	switch v {
	case "true":
		w.on = true
	case "false":
		w.on, w.branch = false, ""
	default:
		w.on, w.branch = true, v
	}
	return nil
}

// readPolicy reads and checks a policy file; its path goes with it as an
// absolute path, so decisions name the file.
func readPolicy(file string) (text, source string, err error) {
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	// LoadPolicy reads only a regular file, bounded; then its text goes.
	if _, err := headless.LoadPolicy(file); err != nil {
		return "", "", err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", "", fmt.Errorf("policy %s: %w", file, err)
	}
	return string(data), file, nil
}

// policyCheck loads a policy file and says how many rules it holds.
func policyCheck(fs *pflag.FlagSet) runFunc {
	return func(_ context.Context, std IO, pos []string) error {
		if len(pos) != 1 {
			return usagef("need one policy file")
		}
		p, err := headless.LoadPolicy(pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(std.Stdout, "ok %s (%d rules)\n", p.Source, len(p.Rules()))
		return nil
	}
}

// policyExplain shows how a request would be decided: every rule tried,
// the one that decides, and what a pane and corral exec do with it.
func policyExplain(fs *pflag.FlagSet) runFunc {
	file := fs.String("policy", "", "the policy file (default: config.toml's [panes] policy)")
	payload := fs.String("payload", "", "a PermissionRequest hook payload (a file, or - for stdin) instead of TOOL INPUT")
	asJSON := fs.Bool("json", false, "print the explanation as JSON")
	return func(_ context.Context, std IO, pos []string) error {
		if *file == "" {
			cfg, err := config.LoadConfig(config.ConfigPath())
			if err != nil {
				return err
			}
			if cfg.Panes.Policy == "" {
				return usagef("name a policy with --policy FILE (config.toml sets no [panes] policy)")
			}
			*file = cfg.Panes.Policy
			if !filepath.IsAbs(*file) && !strings.HasPrefix(*file, "~") {
				*file = filepath.Join(filepath.Dir(config.ConfigPath()), *file)
			}
			if strings.HasPrefix(*file, "~/") {
				home, _ := os.UserHomeDir()
				*file = filepath.Join(home, (*file)[2:])
			}
		}
		p, err := headless.LoadPolicy(*file)
		if err != nil {
			return err
		}
		var req agents.Permission
		switch {
		case *payload != "":
			if len(pos) > 0 {
				return usagef("give --payload or TOOL INPUT, not both")
			}
			in := std.Stdin
			if *payload != "-" {
				if fi, err := os.Stat(*payload); err == nil && !fi.Mode().IsRegular() {
					return fmt.Errorf("payload %s is not a regular file", *payload)
				}
				f, err := os.Open(*payload)
				if err != nil {
					return fmt.Errorf("payload: %w", err)
				}
				defer f.Close()
				in = f
			}
			data, err := io.ReadAll(io.LimitReader(in, agents.MaxPayload+1))
			if err != nil {
				return fmt.Errorf("payload: %w", err)
			}
			var ok bool
			if req, ok = agents.ParsePermission(data); !ok {
				return fmt.Errorf("payload: not a PermissionRequest hook's JSON (hook_event_name, tool_name, tool_input)")
			}
		case len(pos) == 2 && json.Valid([]byte(pos[1])) && strings.HasPrefix(strings.TrimSpace(pos[1]), "{"):
			// A JSON object is the tool's whole input, every field of it, as
			// a hook gives it.
			payload, _ := json.Marshal(map[string]any{"hook_event_name": "PermissionRequest", "tool_name": pos[0],
				"tool_input": json.RawMessage(pos[1])})
			req, _ = agents.ParsePermission(payload)
		case len(pos) == 1 || len(pos) == 2:
			req = agents.Permission{Tool: pos[0], Whole: true}
			if len(pos) == 2 {
				req.Input = pos[1]
			}
		default:
			return usagef("need TOOL [INPUT], or --payload FILE")
		}
		ap, v := approval.Explain(p, req)
		if v.Matched == nil {
			v.Matched = make([]bool, len(p.Rules()))
		}
		if *asJSON {
			type ruleJSON struct {
				Rule    int    `json:"rule"`
				Text    string `json:"text"`
				Matched bool   `json:"matched"`
			}
			out := struct {
				Policy   string                    `json:"policy"`
				Tool     string                    `json:"tool"`
				Input    string                    `json:"input"`
				Whole    bool                      `json:"whole"`
				Rules    []ruleJSON                `json:"rules"`
				Commands []headless.CommandVerdict `json:"commands"`
				Refused  string                    `json:"refused"`
				Decision string                    `json:"decision"`
				Rule     int                       `json:"rule"`
				Text     string                    `json:"text"`
			}{Policy: p.Source, Tool: req.Tool, Input: req.Input, Whole: req.Whole && !req.Question, Rules: []ruleJSON{},
				Commands: v.Commands, Refused: v.Refused, Decision: ap.Decision, Rule: ap.Rule, Text: ap.Text}
			if out.Commands == nil {
				out.Commands = []headless.CommandVerdict{}
			}
			for i, r := range p.Rules() {
				out.Rules = append(out.Rules, ruleJSON{Rule: i + 1, Text: r, Matched: v.Matched[i]})
			}
			return printJSON(std, out)
		}
		w := std.Stdout
		fmt.Fprintf(w, "policy: %s\nrequest: tool %q, input %q\n", p.Source, req.Tool, req.Input)
		if req.Question || !req.Whole {
			fmt.Fprintf(w, "\nverdict: %s\n", ap.Text)
			return nil
		}
		for i, r := range p.Rules() {
			fmt.Fprintf(w, "%d. %s: %s\n", i+1, r, ruleMark(v, i+1))
		}
		if v.Shell {
			// What each rule's input saw: the simple commands as the shell reads them.
			fmt.Fprintln(w, "\ncommands:")
			for _, c := range v.Commands {
				fmt.Fprintf(w, "  %s: %s\n", c.Command, commandMark(c))
			}
		}
		fmt.Fprintf(w, "\nverdict: %s\n", ap.Text)
		if ap.Decision == "person" {
			fmt.Fprintln(w, "(a pane asks you; corral exec, with nobody to ask, denies it)")
		}
		return nil
	}
}

// ruleMark says what rule n did with a request: no match, decides, took a
// part it could not allow, or matched after an earlier rule took it.
func ruleMark(v headless.Verdict, n int) string {
	if !v.Matched[n-1] {
		return "no match"
	}
	if (v.Decision == headless.Deny && v.Rule == n) || (v.Decision == headless.Allow && slices.Contains(v.Rules, n)) {
		return "MATCH: decides"
	}
	if v.RefusedBy == n {
		return "MATCH, but " + v.Why
	}
	for _, c := range v.Commands {
		if c.Rule == n && c.Decision == headless.Person {
			return "MATCH, but " + c.Why
		}
	}
	if v.Shell && len(v.Commands) > 1 {
		for _, c := range v.Commands {
			if c.Rule == n {
				return "MATCH: takes `" + c.Command + "`"
			}
		}
	}
	return "match (an earlier rule decides)"
}

// commandMark says what became of one simple command.
func commandMark(c headless.CommandVerdict) string {
	switch {
	case c.Decision == headless.Allow:
		return fmt.Sprintf("allowed by rule %d", c.Rule)
	case c.Decision == headless.Deny:
		return fmt.Sprintf("denied by rule %d", c.Rule)
	case c.Rule != 0:
		return fmt.Sprintf("rule %d takes it but %s", c.Rule, c.Why)
	}
	return c.Why
}
