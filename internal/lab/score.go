package lab

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/lab/fakeagent"
)

// Score is one detector's result. Its JSON shape is public.
type Score struct {
	Detector        string       `json:"detector"`
	Prompts         int          `json:"prompts"`
	Caught          int          `json:"caught"`
	DelayMedianMS   float64      `json:"delay_median_ms"`
	DelayMaxMS      float64      `json:"delay_max_ms"`
	ResidueMedianMS float64      `json:"residue_median_ms"`
	FalseWaiting    FalseWaiting `json:"false_waiting"`
}

// FalseWaiting is "waiting" said when the agent was not waiting.
type FalseWaiting struct {
	Count   int                `json:"count"`
	Seconds float64            `json:"seconds"`
	ByTruth map[string]float64 `json:"by_truth"` // seconds, by what the agent was doing
}

type interval struct{ start, end int } // sample indexes, end exclusive

func score(samples []sample, osc bool) []Score {
	var prompts []interval
	for i := 0; i < len(samples); i++ {
		if samples[i].truth == fakeagent.TruthBlocked {
			j := i
			for j < len(samples) && samples[j].truth == fakeagent.TruthBlocked {
				j++
			}
			prompts = append(prompts, interval{i, j})
			i = j
		}
	}
	var out []Score
	for _, d := range Detectors {
		if d == "osc7501" && !osc {
			continue
		}
		sc := Score{Detector: d, Prompts: len(prompts), FalseWaiting: FalseWaiting{ByTruth: map[string]float64{"working": 0, "idle": 0, "idle_after_question": 0}}}
		var delays, residues []float64
		residue := map[int]bool{} // samples that are a prompt's residue
		for _, pr := range prompts {
			for i := pr.start; i < pr.end; i++ {
				if samples[i].waiting[d] {
					sc.Caught++
					delays = append(delays, ms(samples[i].at.Sub(samples[pr.start].at)))
					break
				}
			}
			j := pr.end
			for j < len(samples) && samples[j].waiting[d] && samples[j].truth != fakeagent.TruthBlocked {
				residue[j] = true
				j++
			}
			if pr.end < len(samples) {
				end := samples[pr.end].at
				stop := end
				if j < len(samples) {
					stop = samples[j].at
				}
				residues = append(residues, ms(stop.Sub(end)))
			}
		}
		in := false
		for i, s := range samples {
			false_ := s.waiting[d] && s.truth != fakeagent.TruthBlocked && !residue[i]
			if false_ && !in {
				sc.FalseWaiting.Count++
			}
			in = false_
			if false_ {
				secs := Sample.Seconds()
				sc.FalseWaiting.Seconds += secs
				switch s.truth {
				case fakeagent.TruthWorking, fakeagent.TruthWorkingQuiet:
					sc.FalseWaiting.ByTruth["working"] += secs
				case fakeagent.TruthIdleAfterQuestion:
					sc.FalseWaiting.ByTruth["idle_after_question"] += secs
				default:
					sc.FalseWaiting.ByTruth["idle"] += secs
				}
			}
		}
		sc.DelayMedianMS, sc.DelayMaxMS = median(delays), maxOf(delays)
		sc.ResidueMedianMS = median(residues)
		sc.FalseWaiting.Seconds = round1(sc.FalseWaiting.Seconds)
		for k, v := range sc.FalseWaiting.ByTruth {
			sc.FalseWaiting.ByTruth[k] = round1(v)
		}
		out = append(out, sc)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Milliseconds()) }

func round1(f float64) float64 { return float64(int(f*10+0.5)) / 10 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// Table writes the scores as a table.
func Table(w io.Writer, scores []Score) {
	fmt.Fprintf(w, "%-10s %8s %10s %10s %12s %14s   %s\n", "detector", "caught", "delay med", "delay max", "residue med", "false waiting", "by truth (s): working / idle / idle after ?")
	for _, s := range scores {
		fmt.Fprintf(w, "%-10s %8s %8.0fms %8.0fms %10.0fms %6d %6.1fs   %s\n", s.Detector, fmt.Sprintf("%d/%d", s.Caught, s.Prompts),
			s.DelayMedianMS, s.DelayMaxMS, s.ResidueMedianMS, s.FalseWaiting.Count, s.FalseWaiting.Seconds,
			strings.Join([]string{fmt.Sprintf("%.1f", s.FalseWaiting.ByTruth["working"]), fmt.Sprintf("%.1f", s.FalseWaiting.ByTruth["idle"]),
				fmt.Sprintf("%.1f", s.FalseWaiting.ByTruth["idle_after_question"])}, " / "))
	}
}
