package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/corral-dev/corral/internal/api"
	"github.com/spf13/pflag"
)

// copyLines copies NDJSON lines from r to stdout as they arrive.
func copyLines(std IO, r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	n := 0
	for sc.Scan() {
		fmt.Fprintln(std.Stdout, sc.Text())
		n++
	}
	return n, sc.Err()
}

var knownStates = map[string]bool{"working": true, "blocked": true, "idle": true, "done": true, "error": true, "exited": true}

// runWait waits until every named pane is in one of the states.
func runWait(fs *pflag.FlagSet) runFunc {
	states := fs.String("state", "", "`STATES` to wait for, comma-separated: working, blocked, idle, done, error, exited")
	timeout := fs.Duration("timeout", 0, "give up after this long (exit 124); 0 waits forever. A pane that exits (unless exited is a state waited for) ends the wait at once (exit 4)")
	asJSON := fs.Bool("json", false, "print the panes as a JSON array, when reached or on timeout")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) == 0 {
			return usagef("need at least one pane id or name")
		}
		want := map[string]bool{}
		for _, s := range strings.Split(*states, ",") {
			s = strings.TrimSpace(s)
			if !knownStates[s] {
				return usagef("--state %q: use working, blocked, idle, done, error or exited", s)
			}
			want[s] = true
		}
		if *timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *timeout)
			defer cancel()
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		pos = localRefs(ctx, c, pos)
		// Panes of other hosts (HOST:ID) are waited for on the fleet's
		// stream, where this host's own are too, as SELF:ID.
		stream, self := "/v1/events?follow=1", ""
		for _, ref := range pos {
			if strings.Contains(ref, ":") {
				var st struct {
					Name string `json:"name"`
				}
				if err := c.Do(ctx, "GET", "/v1/fleet/status", nil, &st); err != nil {
					return waitError(ctx, apiError(err))
				}
				stream, self = "/v1/fleet/events?follow=1", st.Name
				break
			}
		}
		keyOf := func(ref, id string) string { // how the stream names a pane
			if self == "" {
				return id
			}
			host, _, ok := strings.Cut(ref, ":")
			if !ok {
				host = self
			}
			return host + ":" + id
		}
		// Follow the stream first, then read the current states: a change
		// between the two is in the stream.
		body, err := c.Stream(ctx, stream)
		if err != nil {
			return waitError(ctx, apiError(err))
		}
		defer body.Close()
		pending := map[string]string{} // pane key → the name it was asked by
		panes := map[string]api.Pane{}
		for _, ref := range pos {
			var p api.Pane
			if err := c.Do(ctx, "GET", panePath(ref, ""), nil, &p); err != nil {
				return waitError(ctx, apiError(err))
			}
			k := keyOf(ref, p.ID)
			panes[k] = p
			if !want[p.State] {
				pending[k] = ref
			}
		}
		// The panes in the order asked, as last known.
		result := func() []api.Pane {
			out := []api.Pane{}
			for _, ref := range pos {
				_, local, _ := strings.Cut(ref, ":")
				if local == "" {
					local = ref
				}
				for k, p := range panes {
					if (p.ID == local || p.Name == local) && (self == "" || k == keyOf(ref, p.ID)) {
						out = append(out, p)
					}
				}
			}
			return out
		}
		// A pane that exited never reaches another state: say so at once.
		ended := func() error {
			var gone []string
			for k, ref := range pending {
				if p := panes[k]; p.State == "exited" {
					gone = append(gone, ref+" is "+paneState(p))
				}
			}
			if len(gone) == 0 {
				return nil
			}
			sort.Strings(gone)
			if *asJSON {
				_ = printJSON(std, result())
			}
			return &exitError{code: exitEnded, err: fmt.Errorf("waiting for %s: %s, and an exited pane stays exited (wait for exited too, or run it again)", *states, strings.Join(gone, ", "))}
		}
		if err := ended(); err != nil {
			return err
		}
		dec := json.NewDecoder(body)
		for len(pending) > 0 {
			var ev struct {
				Host string `json:"host"`
				api.Event
			}
			if err := dec.Decode(&ev); err != nil {
				if ctx.Err() == context.DeadlineExceeded {
					// Say where each pane is; --json prints them as they are.
					var where []string
					for k, p := range panes {
						if ref, ok := pending[k]; ok {
							where = append(where, ref+" is "+paneState(p))
						}
					}
					sort.Strings(where)
					if *asJSON {
						_ = printJSON(std, result())
					}
					return &exitError{code: exitTimeout, err: fmt.Errorf("timed out after %v waiting for %s: %s", *timeout, *states, strings.Join(where, ", "))}
				}
				return fmt.Errorf("the event stream ended: %v", err)
			}
			k := ev.Pane
			if self != "" {
				k = ev.Host + ":" + ev.Pane
			}
			ref, ok := pending[k]
			if !ok {
				continue
			}
			if want[ev.State] {
				delete(pending, k)
				var p api.Pane
				if err := c.Do(ctx, "GET", panePath(ref, ""), nil, &p); err == nil {
					panes[k] = p
					continue
				}
			}
			p := panes[k]
			p.State, p.Kind, p.Message, p.Source, p.ExitCode = ev.State, ev.Kind, ev.Message, ev.Source, ev.ExitCode
			panes[k] = p
			if err := ended(); err != nil {
				return err
			}
		}
		if *asJSON {
			return printJSON(std, result())
		}
		return nil
	}
}

// paneState is a pane's state as ls shows it: blocked/permission, exited (1).
func paneState(p api.Pane) string {
	s := p.State
	if p.Kind != "" {
		s += "/" + p.Kind
	}
	if p.ExitCode != nil {
		s += fmt.Sprintf(" (%d)", *p.ExitCode)
	}
	return s
}

func waitError(ctx context.Context, err error) error {
	if ctx.Err() == context.DeadlineExceeded {
		return &exitError{code: exitTimeout, err: fmt.Errorf("timed out: %v", err)}
	}
	return err
}
