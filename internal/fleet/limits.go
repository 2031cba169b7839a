package fleet

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/corral-dev/corral/internal/api"
)

// A member keeps within three quarters of its quota in the pane bucket:
// the rest is room for the markers of panes it removed, which the hub
// counts too until it sweeps them.
const (
	hostPanes = MaxHostRecords*3/4 - 1 // and the alive key
	hostBytes = MaxHostBytes * 3 / 4
)

// storedSize is about what a record takes in the store (the hub counts
// the message's subject and headers too).
func storedSize(subject string, value int) int { return len(subject) + value + 64 }

// fitPane encodes a pane's record within MaxRecord: free text too long
// for it (a message, a command line, a permission request's input) is
// cut, first to 1 KB a field, then to 128 bytes.
func fitPane(rec PaneRecord) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil || len(b) <= MaxRecord {
		return b, err
	}
	for _, n := range []int{1 << 10, 128} {
		r := rec
		shortenPane(&r.Pane, n)
		if b, err = json.Marshal(r); err != nil || len(b) <= MaxRecord {
			return b, err
		}
	}
	return nil, fmt.Errorf("pane %s's record takes %d bytes even shortened; the fleet takes records of at most %d", rec.ID, len(b), MaxRecord)
}

// shortenPane cuts a pane's free text to n bytes a field and its lists
// to a few items, copying what it changes (the pane's slices are the
// daemon's).
func shortenPane(p *api.Pane, n int) {
	for _, s := range []*string{&p.Name, &p.Agent, &p.State, &p.Kind, &p.Message, &p.Source, &p.Rule, &p.Cwd, &p.Foreground,
		&p.Integration, &p.IntegrationError, &p.SessionID, &p.Policy, &p.Backend} {
		*s = cut(*s, n)
	}
	cmd := p.Command[:min(len(p.Command), n/8)]
	p.Command = make([]string, len(cmd))
	for i, a := range cmd {
		p.Command[i] = cut(a, n)
	}
	recs := p.Records[len(p.Records)-min(len(p.Records), n/64):]
	p.Records = make([]api.Record, len(recs))
	for i, r := range recs {
		r.App, r.Title, r.Message = cut(r.App, n), cut(r.Title, n), cut(r.Message, n)
		p.Records[i] = r
	}
	if a := p.Approval; a != nil {
		c := *a
		c.Tool, c.Input, c.Text, c.Policy = cut(c.Tool, n), cut(c.Input, n), cut(c.Text, n), cut(c.Policy, n)
		p.Approval = &c
	}
	if w := p.Worktree; w != nil {
		c := *w
		c.Path, c.Repo, c.Branch, c.Base, c.Error = cut(c.Path, n), cut(c.Repo, n), cut(c.Branch, n), cut(c.Base, n), cut(c.Error, n)
		p.Worktree = &c
	}
	if t := p.Tmux; t != nil {
		c := *t
		c.Socket, c.Target = cut(c.Socket, n), cut(c.Target, n)
		p.Tmux = &c
	}
}

// maxEventData leaves room in MaxEvent for the event's headers (its
// number and its id for deduplication).
const maxEventData = MaxEvent - 256

// fitEvent encodes an event within maxEventData, its free text cut if
// need be.
func fitEvent(ev Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil || len(b) <= maxEventData {
		return b, err
	}
	for _, n := range []int{512, 64} {
		e := ev
		for _, s := range []*string{&e.Name, &e.Agent, &e.State, &e.Kind, &e.Message, &e.Source, &e.Rule, &e.Previous, &e.PreviousKind} {
			*s = cut(*s, n)
		}
		if b, err = json.Marshal(e); err != nil || len(b) <= maxEventData {
			return b, err
		}
	}
	return nil, fmt.Errorf("event %d of pane %s takes %d bytes even shortened; the fleet takes events of at most %d", ev.Seq, ev.Pane, len(b), maxEventData)
}

// cut shortens s to at most n bytes (and an ellipsis), on a character
// boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
