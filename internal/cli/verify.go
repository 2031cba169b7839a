package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/verify"
)

func runVerify(ctx context.Context, std IO, args []string) error {
	fs := newFlags("verify", std)
	agent := fs.String("agent", "", "the agent to verify: "+fmt.Sprint(verify.Names()))
	record := fs.String("record", "", "save the run (asciicast with truth markers, hook timeline, steps) in this folder")
	asJSON := fs.Bool("json", false, "print the judged steps as JSON")
	// Everything after "--" is the command, flags included.
	var command []string
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], args[i+1:]
			break
		}
	}
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected %q; the command goes after --", pos[0])
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
