package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/replay"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/spf13/pflag"
)

// explainJSON is the shape of `corral explain --json`.
type explainJSON struct {
	Agent        string      `json:"agent"`
	Source       string      `json:"source"`
	RecognisedBy string      `json:"recognised_by"`
	Title        string      `json:"title"`
	Screen       []string    `json:"screen"`
	Rules        []trialJSON `json:"rules"`
	Verdict      verdictJSON `json:"verdict"`
}

type trialJSON struct {
	Rule     string `json:"rule"`
	State    string `json:"state"`
	Kind     string `json:"kind"`
	Region   string `json:"region"`
	Text     string `json:"text"`
	Matched  bool   `json:"matched"`
	Evidence string `json:"evidence"`
	Message  string `json:"message"`
}

type verdictJSON struct {
	State    string `json:"state"`
	Kind     string `json:"kind"`
	Rule     string `json:"rule"`
	Evidence string `json:"evidence"`
	Message  string `json:"message"`
}

func runExplain(fs *pflag.FlagSet) runFunc {
	agent := fs.String("agent", "", "use this agent's rules instead of recognising it")
	asJSON := fs.Bool("json", false, "print the explanation as JSON")
	size := fs.String("size", "120x32", "screen size `COLSxROWS` for raw byte files (casts carry their own)")
	atSec := fs.Float64("at", 0, "explain the screen this many `SECONDS` into a cast (default: its end)")
	return func(_ context.Context, std IO, pos []string) error {
		if len(pos) != 1 {
			return usagef("need one file: a .cast, raw bytes, or plain screen text (- reads stdin)")
		}
		rec, set, err := loadInputs(std, pos[0], *size, *agent)
		if err != nil {
			return err
		}
		if *atSec < 0 {
			return usagef("--at must not be negative")
		}
		scr := screenOf(rec, set, time.Duration(*atSec*float64(time.Second)))

		m, how := set.Generic(), "default (nothing recognised it)"
		if *agent != "" {
			m, _ = set.ByName(*agent)
			how = "--agent"
		} else if found := set.IdentifyScreen(scr); found != nil {
			m, how = found, "screen or title"
		}
		ex := m.Explain(scr)
		if *asJSON {
			out := explainJSON{Agent: m.Name, Source: m.Source, RecognisedBy: how, Title: scr.Title, Screen: scr.Lines,
				Verdict: verdictJSON{State: string(ex.Verdict.State), Kind: ex.Verdict.Kind, Rule: ex.Verdict.Rule, Evidence: ex.Verdict.Evidence, Message: ex.Verdict.Message}}
			for _, t := range ex.Trials {
				out.Rules = append(out.Rules, trialJSON{Rule: t.Rule, State: string(t.State), Kind: t.Kind, Region: t.Region.String(),
					Text: t.Text, Matched: t.Matched, Evidence: t.Evidence, Message: t.Message})
			}
			enc := json.NewEncoder(std.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		}
		printExplanation(std, m, how, scr, ex)
		return nil
	}
}

// screenOf is the final screen of a recording. A file with no escape
// sequences at all is taken as plain screen text, one row per line.
func screenOf(rec *replay.Recording, set *rules.Set, at time.Duration) rules.Screen {
	if len(rec.Events) == 1 && rec.Events[0].Code == "o" && !strings.Contains(rec.Events[0].Data, "\x1b") {
		text := strings.ReplaceAll(rec.Events[0].Data, "\r\n", "\n")
		return rules.Screen{Lines: strings.Split(strings.TrimRight(text, "\n"), "\n")}
	}
	res := replay.Run(rec, replay.Options{Rules: set, Until: at})
	defer res.Close()
	snap := res.Engine.Terminal().Snapshot()
	return rules.Screen{Lines: snap.Lines, Title: snap.Title}
}

func printExplanation(std IO, m *rules.Manifest, how string, scr rules.Screen, ex rules.Explanation) {
	w := std.Stdout
	fmt.Fprintf(w, "agent: %s, recognised by %s; rules from %s\n", m.Name, how, m.Source)
	fmt.Fprintf(w, "title: %q\n", scr.Title)
	fmt.Fprintln(w, "screen:")
	for i, l := range scr.Lines {
		fmt.Fprintf(w, "  %3d │%s\n", i+1, l)
	}
	fmt.Fprintln(w)
	if len(ex.Trials) == 0 {
		fmt.Fprintln(w, "no rules: this manifest has none")
	}
	for i, t := range ex.Trials {
		head := string(t.State)
		if t.Kind != "" {
			head += "/" + t.Kind
		}
		mark := "no match"
		if t.Matched {
			mark = fmt.Sprintf("MATCH %q", t.Evidence)
			if t.Message != "" {
				mark += fmt.Sprintf(" (message %q)", t.Message)
			}
		}
		fmt.Fprintf(w, "%d. %s → %s, reads %s: %s\n", i+1, t.Rule, head, t.Region, mark)
		if t.Note != "" {
			fmt.Fprintf(w, "   note: %s\n", t.Note)
		}
		fmt.Fprintf(w, "   region text:%s\n", indentClip(t.Text, 6))
	}
	v := ex.Verdict
	fmt.Fprintln(w)
	switch {
	case v.Rule == "":
		fmt.Fprintln(w, "verdict: idle (no rule matched; corral never guesses blocked)")
	case v.Kind != "":
		fmt.Fprintf(w, "verdict: %s/%s by rule %s\n", v.State, v.Kind, v.Rule)
	default:
		fmt.Fprintf(w, "verdict: %s by rule %s\n", v.State, v.Rule)
	}
}

// indentClip shows at most n lines of text, indented, or "(empty)".
func indentClip(text string, n int) string {
	if strings.TrimSpace(text) == "" {
		return " (empty)"
	}
	lines := strings.Split(text, "\n")
	var b bytes.Buffer
	if len(lines) > n {
		fmt.Fprintf(&b, " (last %d of %d lines)", n, len(lines))
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		b.WriteString("\n     ┆ " + l)
	}
	return b.String()
}
