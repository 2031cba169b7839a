package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/verify"
	"github.com/spf13/pflag"
)

func runVerify(fs *pflag.FlagSet) runFunc {
	agent := fs.String("agent", "", "the agent to verify: "+fmt.Sprint(verify.Names()))
	record := fs.String("record", "", "save the run (asciicast with truth markers, hook timeline, steps) in this `DIR`")
	asJSON := fs.Bool("json", false, "print the judged steps as JSON")
	headlessRun := fs.Bool("headless", false, "run the headless cases (corral exec) of --agent, or of every agent with a headless mode")
	cases := fs.String("case", "", "with --headless: only these `CASES` (comma-separated)")
	markdown := fs.Bool("markdown", false, "with --headless: print the tables as Markdown (docs/agents.md)")
	return func(ctx context.Context, std IO, args []string) error {
		// Everything after "--" is the command, flags included.
		var command []string
		pos := args
		for i, a := range args {
			if a == "--" {
				pos, command = args[:i], args[i+1:]
				break
			}
		}
		if len(pos) > 0 {
			return usagef("unexpected %q; the command goes after --", pos[0])
		}
		if *headlessRun {
			if *record != "" {
				return usagef("--record saves a pane run; --headless has none")
			}
			return runVerifyHeadless(ctx, std, *agent, command, *cases, *asJSON, *markdown)
		}
		p, err := verify.ProfileFor(*agent, command)
		if err != nil {
			return usagef("%v", err)
		}
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find corral's own binary: %w", err)
		}
		var log = std.Stderr
		if *asJSON {
			log = nil
		}
		res, rec, err := verify.Run(ctx, verify.Options{Profile: p, Command: command, Exe: exe, Rules: loadRules(std),
			RulesDir: rules.DefaultUserDir(), Log: log})
		if err != nil {
			return err
		}
		if *record != "" {
			if err := rec.Save(*record); err != nil {
				return err
			}
		}
		if *asJSON {
			if err := printJSON(std, res); err != nil {
				return err
			}
		} else {
			verify.Print(std.Stdout, res)
		}
		if !res.OK() {
			return &exitError{code: 1, err: fmt.Errorf("corral was wrong at %d of %d steps", len(res.Steps)-res.Scores["live"], len(res.Steps))}
		}
		return nil
	}
}

// runVerifyHeadless runs the headless cases of one agent or of all.
func runVerifyHeadless(ctx context.Context, std IO, agent string, command []string, cases string, asJSON, markdown bool) error {
	agents := verify.HeadlessAgents
	if agent != "" {
		a, err := verify.HeadlessAgentFor(agent)
		if err != nil {
			return usagef("%v", err)
		}
		agents = []*verify.HeadlessAgent{a}
	}
	bin := ""
	if len(command) > 0 {
		if agent == "" || len(command) > 1 {
			return usagef("--headless takes the agent's binary after -- with --agent, and nothing else")
		}
		bin = command[0]
	}
	var only []string
	if cases != "" {
		only = strings.Split(cases, ",")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find corral's own binary: %w", err)
	}
	var results []*verify.HeadlessResult
	wrong, total := 0, 0
	for _, a := range agents {
		if agent == "" {
			if _, err := exec.LookPath(a.BinaryName()); err != nil {
				fmt.Fprintf(std.Stderr, "corral verify: no %s on PATH: %s not run\n", a.BinaryName(), a.Profile)
				continue
			}
		}
		r, err := verify.RunHeadless(ctx, verify.HeadlessOptions{Agent: a, Command: bin, Exe: exe, Only: only, Log: std.Stderr})
		if err != nil {
			return err
		}
		results = append(results, r)
		for _, c := range r.Cases {
			total++
			if !c.Right {
				wrong++
			}
		}
		if !asJSON && !markdown {
			verify.PrintHeadless(std.Stdout, r)
			fmt.Fprintln(std.Stdout)
		}
	}
	switch {
	case asJSON:
		if err := printJSON(std, results); err != nil {
			return err
		}
	case markdown:
		verify.HeadlessMatrix(std.Stdout, results)
	}
	if len(results) == 0 {
		return fmt.Errorf("no agent with a headless mode is on PATH (claude, codex, gemini, qwen): install one, or name one with --agent A -- /path/to/its/binary")
	}
	if total == 0 {
		return usagef("no headless case named %q", cases)
	}
	if wrong > 0 {
		return &exitError{code: 1, err: fmt.Errorf("corral was wrong at %d of %d headless cases", wrong, total)}
	}
	return nil
}
