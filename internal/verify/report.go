package verify

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/corral-dev/corral/internal/agentdef"
)

// Print writes the judged run as a table: per step the expected state,
// corral's live state, its source and delay, and the replays' verdicts.
func Print(w io.Writer, r *Result) {
	version := r.Version
	if version == "" {
		version = "(version unknown)"
	}
	fmt.Fprintf(w, "corral verify: %s %s", r.Agent, version)
	if r.Pinned != "" && r.Version != r.Pinned {
		fmt.Fprintf(w, " — rules checked against %s", r.Pinned)
	}
	integration := r.Integration
	if integration == "" {
		integration = "none"
		if r.IntegrationOff != "" {
			integration += " — " + r.IntegrationOff // why, and what to do
		}
	}
	fmt.Fprintf(w, "; hooks: %s\n\n", integration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "step\texpected\ttruth\tcorral\tsource\tdelay\tscreen\thooks\tosc7501\treplay\t")
	for _, s := range r.Steps {
		live := s.Verdicts["live"]
		mark := ""
		if !live.Right {
			mark = "  ✗"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t", s.Name, mark, s.Want, s.TruthSource, stateOf(live), live.Source, delay(live))
		for _, name := range []string{"screen", "hooks", "osc7501", "replay"} {
			v := s.Verdicts[name]
			if v.Right {
				fmt.Fprintf(tw, "ok %s\t", delay(v))
			} else {
				fmt.Fprintf(tw, "%s\t", stateOf(v))
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	var scores []string
	for _, sc := range Scorers {
		scores = append(scores, fmt.Sprintf("%s %d/%d", sc.Name, r.Scores[sc.Name], len(r.Steps)))
	}
	for _, s := range r.Steps {
		if s.Fault != "" {
			fmt.Fprintf(w, "%s: %s\n", s.Name, s.Fault)
		}
	}
	fmt.Fprintf(w, "\nright: %s\n", strings.Join(scores, ", "))
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "not run: %s\n", strings.Join(r.Skipped, ", "))
	}
}

func stateOf(v Verdict) string { return Want{State: v.State, Kind: v.Kind}.String() }

func delay(v Verdict) string {
	if v.Delay > -0.005 && v.Delay < 0.005 {
		return "+0.00s"
	}
	return fmt.Sprintf("%+.2fs", v.Delay)
}

// Matrix writes judged runs as Markdown: a summary row per agent, then
// each agent's steps.
func Matrix(w io.Writer, results []*Result) {
	fmt.Fprintln(w, "| agent | version | hooks | steps | live | screen | hooks only | OSC 7501 only | replay (all) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		integration := r.Integration
		if integration == "" {
			integration = "none"
		}
		n := len(r.Steps)
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d/%d | %d/%d | %d/%d | %d/%d | %d/%d |\n", r.Agent, r.Version, integration, n,
			r.Scores["live"], n, r.Scores["screen"], n, r.Scores["hooks"], n, r.Scores["osc7501"], n, r.Scores["replay"], n)
	}
	for _, r := range results {
		fmt.Fprintf(w, "\n### %s %s\n\n", r.Agent, r.Version)
		fmt.Fprintln(w, "| step | expected | truth | corral live | source | delay | right | screen | hooks | OSC 7501 |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
		for _, s := range r.Steps {
			live := s.Verdicts["live"]
			right := "right"
			if !live.Right {
				right = "**wrong**"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |", s.Name, s.Want, s.TruthSource, stateOf(live), live.Source, delay(live), right)
			for _, name := range []string{"screen", "hooks", "osc7501"} {
				v := s.Verdicts[name]
				if v.Right {
					fmt.Fprintf(w, " ok %s |", delay(v))
				} else {
					fmt.Fprintf(w, " %s |", stateOf(v))
				}
			}
			fmt.Fprintln(w)
		}
		for _, s := range r.Steps {
			if s.Fault != "" {
				fmt.Fprintf(w, "\n%s: %s.\n", s.Name, s.Fault)
			}
		}
		if len(r.Skipped) > 0 {
			fmt.Fprintf(w, "\nNot run: %s.\n", strings.Join(r.Skipped, ", "))
		}
	}
	wrongSteps(w, results)
}

// wrongSteps lists, from the same runs, every step corral got wrong live
// and every step one signal alone gets wrong in replay: the list is the
// runs', so the page cannot say otherwise.
func wrongSteps(w io.Writer, results []*Result) {
	fmt.Fprintln(w, "\n### Wrong steps")
	fmt.Fprintln(w)
	live := 0
	for _, r := range results {
		for _, s := range r.Steps {
			if v := s.Verdicts["live"]; !v.Right {
				live++
				fmt.Fprintf(w, "- live, %s %s at `%s`: %s → %s (%s)\n", r.Agent, r.Version, s.Name, s.Want, stateOf(v), v.Source)
			}
		}
	}
	if live == 0 {
		fmt.Fprintln(w, "Live, corral was right at every step of every run above.")
	}
	names := map[string]string{"screen": "screen rules alone", "hooks": "hooks alone", "osc7501": "OSC 7501 alone"}
	for _, scorer := range []string{"screen", "hooks", "osc7501"} {
		var parts []string
		for _, r := range results {
			var steps []string
			for _, s := range r.Steps {
				if v := s.Verdicts[scorer]; !v.Right {
					steps = append(steps, fmt.Sprintf("`%s` (%s)", s.Name, stateOf(v)))
				}
			}
			if len(steps) > 0 {
				parts = append(parts, r.Agent+": "+strings.Join(steps, ", "))
			}
		}
		if len(parts) == 0 {
			fmt.Fprintf(w, "\n%s: right at every step.\n", capitalize(names[scorer]))
			continue
		}
		fmt.Fprintf(w, "\n%s, wrong at: %s.\n", capitalize(names[scorer]), strings.Join(parts, "; "))
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// apiTitles are the model APIs as docs/agents.md names them.
var apiTitles = map[API]string{APIAnthropic: "Anthropic Messages (SSE)", APIGemini: "Gemini API",
	APIResponses: "OpenAI Responses", APIChat: "Chat Completions"}

// Versions writes docs/agents.md's table of the versions verified, from
// the registry: each agent's package, version, model API, how its hooks
// reach corral, and what verify takes as the truth (its OSC 7501 reports,
// or the scenario's phase).
func Versions(w io.Writer, r *agentdef.Registry) {
	fmt.Fprintln(w, "| agent | npm package | version | model API | integration | truth |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, a := range r.All() {
		integration, truth := a.Hooks.Summary, "phase"
		if integration == "" {
			integration = "none"
		}
		if a.Verify.Reports {
			truth = "OSC 7501"
		}
		api := apiTitles[API(a.Verify.API)]
		if api == "" {
			api = a.Verify.API
		}
		fmt.Fprintf(w, "| %s | `%s` | %s | %s | %s | %s |\n", a.Title, a.Install.NPM, a.Install.Verified, api, integration, truth)
	}
}
