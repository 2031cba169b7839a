package term

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// EventKind says which protocol sequence an Event came from.
type EventKind uint8

const (
	// EventStatus is an OSC 7501 report; Text holds its body (after "7501;").
	EventStatus EventKind = iota + 1
	// EventTitle is a window title change (OSC 0 or 2); Text holds the title.
	EventTitle
	// EventProgress is OSC 9;4; ProgressState and Progress hold its fields.
	EventProgress
	// EventPromptMark is an OSC 133 shell mark; Mark is 'A', 'B', 'C' or 'D'.
	EventPromptMark
	// EventBell is a BEL outside any sequence.
	EventBell
	// EventNotify is a desktop notification request (OSC 9, 99, 777).
	EventNotify
	// EventReset is a full reset (RIS, ESC c).
	EventReset
)

func (k EventKind) String() string {
	switch k {
	case EventStatus:
		return "status"
	case EventTitle:
		return "title"
	case EventProgress:
		return "progress"
	case EventPromptMark:
		return "prompt-mark"
	case EventBell:
		return "bell"
	case EventNotify:
		return "notify"
	case EventReset:
		return "reset"
	}
	return "unknown"
}

// Progress states of OSC 9;4.
const (
	ProgressRemove        = 0
	ProgressSet           = 1
	ProgressError         = 2
	ProgressIndeterminate = 3
	ProgressPaused        = 4
)

// Event is one tapped sequence. Which fields are set depends on Kind.
type Event struct {
	Kind EventKind
	// Text is the status body, the title, or a notification's body.
	Text string
	// NotifyTitle is a notification's title (OSC 777) when it has one.
	NotifyTitle string
	// NotifySource is "9", "99" or "777".
	NotifySource string
	// Mark is the OSC 133 mark letter; ExitCode its exit status (-1 if none).
	Mark     byte
	ExitCode int
	// ProgressState is an OSC 9;4 state; Progress its value (-1 if none).
	ProgressState int
	Progress      int
	// Oversize is set on a status report longer than MaxStatusSequence:
	// the protocol says to discard it, and the reader counts it.
	Oversize bool
}

// MaxStatusSequence is the longest OSC 7501 sequence, from ESC ] to its
// terminator, that is not discarded.
const MaxStatusSequence = 4096

func (t *Terminal) emit(ev Event) { t.events = append(t.events, ev) }

// tapNotify9 reads OSC 9: a progress report (9;4;…) or an iTerm2
// notification.
func (t *Terminal) tapNotify9(body string) {
	if rest, ok := strings.CutPrefix(body, "4;"); ok {
		t.emit(parseProgress(rest))
		return
	}
	t.emit(Event{Kind: EventNotify, NotifySource: "9", Text: clipText(body, MaxNotifyText)})
}

// tapNotify777 reads OSC 777;notify;TITLE;BODY.
func (t *Terminal) tapNotify777(body string) {
	parts := strings.SplitN(body, ";", 3)
	if len(parts) >= 2 && parts[0] == "notify" {
		ev := Event{Kind: EventNotify, NotifySource: "777", NotifyTitle: clipText(parts[1], MaxTitle)}
		if len(parts) == 3 {
			ev.Text = clipText(parts[2], MaxNotifyText)
		}
		t.emit(ev)
	}
}

// tapPromptMark reads an OSC 133 shell mark.
func (t *Terminal) tapPromptMark(body string) {
	if body == "" {
		return
	}
	ev := Event{Kind: EventPromptMark, Mark: body[0], ExitCode: -1}
	if ev.Mark == 'D' {
		if rest, ok := strings.CutPrefix(body, "D;"); ok {
			code, _, _ := strings.Cut(rest, ";")
			if n, err := strconv.Atoi(code); err == nil {
				ev.ExitCode = n
			}
		}
	}
	t.emit(ev)
}

// A pane sets these strings and corral keeps them (and matches titles
// against every agent's patterns): a program may send megabytes.
const (
	MaxTitle      = 1024
	MaxNotifyText = 4096
)

// clipText cuts s to at most n bytes at a character boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// parseProgress reads "STATE;VALUE" of OSC 9;4.
func parseProgress(s string) Event {
	ev := Event{Kind: EventProgress, Progress: -1}
	st, val, _ := strings.Cut(s, ";")
	n, err := strconv.Atoi(st)
	if err != nil || n < 0 || n > 4 {
		n = ProgressRemove
	}
	ev.ProgressState = n
	if v, err := strconv.Atoi(val); err == nil && v >= 0 && v <= 100 {
		ev.Progress = v
	}
	return ev
}
