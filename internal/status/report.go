// Package status implements OSC 7501, the Program Status Protocol
// (revision 0.4): parsing and encoding reports, and the per-terminal record
// store with its ids, lifetimes and limits. It knows nothing of terminals
// or processes: callers hand it report bodies and lifecycle events.
package status

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// State is a program's reported state.
type State string

const (
	Idle    State = "idle"
	Working State = "working"
	Done    State = "done"
	Blocked State = "blocked"
	Error   State = "error"
	// Clear is the pseudo-state that removes records.
	Clear State = "clear"
)

// Kind says what a blocked program waits for.
type Kind string

const (
	Permission Kind = "permission"
	Question   Kind = "question"
	Auth       Kind = "auth"
)

// Limits from the protocol.
const (
	MaxKeyLen          = 16
	MaxAppLen          = 32
	MaxTitleEncoded    = 256
	MaxTitleDecoded    = 192
	MaxMsgEncoded      = 2732
	MaxMsgDecoded      = 2048
	MaxIDLen           = 128
	MaxIDLevels        = 8
	MaxIDSegmentLen    = 32
	MinRecordsPerPane  = 64
	DefaultRecordLimit = 256
)

// NoProgress marks an absent (indeterminate) progress.
const NoProgress = -1

// Report is one parsed OSC 7501 report.
type Report struct {
	State State
	Kind  Kind // only with Blocked
	// Progress is 0–100, or NoProgress. Only with Working or Blocked.
	Progress int
	App      string
	Title    string // decoded and sanitised
	Msg      string // decoded and sanitised
	ID       string // "" is the root record: the program itself
}

// ErrDiscarded wraps every reason a report is thrown away whole.
var ErrDiscarded = errors.New("status report discarded")

func discard(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDiscarded, fmt.Sprintf(format, args...))
}

// Parse reads a report body: the part of `ESC ] 7501 ; BODY ST` after the
// semicolon. Any error wraps ErrDiscarded; the caller counts it.
func Parse(body string) (Report, error) {
	r := Report{Progress: NoProgress}
	var state, kind, progress, app, title, msg, id string
	var haveState, haveApp, haveTitle, haveMsg, haveID, haveProgress, haveKind bool
	for pair := range strings.SplitSeq(body, ":") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			continue // a pair without '=' is skipped
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(k) > MaxKeyLen {
			return Report{}, discard("key longer than %d bytes", MaxKeyLen)
		}
		// The last duplicate wins.
		switch k {
		case "state":
			state, haveState = v, true
		case "kind":
			kind, haveKind = v, true
		case "progress":
			progress, haveProgress = v, true
		case "app":
			app, haveApp = v, true
		case "title":
			title, haveTitle = v, true
		case "msg":
			msg, haveMsg = v, true
		case "id":
			id, haveID = v, true
		default:
			// unknown keys are skipped
		}
	}
	if !haveState {
		return Report{}, discard("no state")
	}
	switch s := State(state); s {
	case Idle, Working, Done, Blocked, Error, Clear:
		r.State = s
	default:
		return Report{}, discard("unknown state %q", state)
	}
	if haveKind && r.State == Blocked {
		switch k := Kind(kind); k {
		case Permission, Question, Auth:
			r.Kind = k
		}
	}
	if haveProgress && (r.State == Working || r.State == Blocked) {
		r.Progress = parseProgress(progress)
	}
	if haveApp {
		if !validName(app, MaxAppLen) {
			return Report{}, discard("app %q is not 1-%d of [A-Za-z0-9_.+-]", clip(app), MaxAppLen)
		}
		r.App = app
	}
	if haveTitle {
		s, err := decodeText(title, MaxTitleEncoded, MaxTitleDecoded)
		if err != nil {
			return Report{}, discard("title: %v", err)
		}
		r.Title = s
	}
	if haveMsg {
		s, err := decodeText(msg, MaxMsgEncoded, MaxMsgDecoded)
		if err != nil {
			return Report{}, discard("msg: %v", err)
		}
		r.Msg = s
	}
	if haveID {
		if err := ValidateID(id); err != nil {
			return Report{}, discard("%v", err)
		}
		r.ID = id
	}
	return r, nil
}

// parseProgress accepts plain decimal digits 0–100 ("007" is 7); anything
// else ("-1", "+1", "4.5", "101") makes progress absent.
func parseProgress(s string) int {
	if s == "" || len(s) > 8 {
		return NoProgress
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return NoProgress
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > 100 {
		return NoProgress
	}
	return n
}

// ValidateID checks an id: segments of [A-Za-z0-9_.+-]{1,32} joined by '/',
// at most 128 bytes and 8 levels.
func ValidateID(id string) error {
	if len(id) > MaxIDLen {
		return fmt.Errorf("id longer than %d bytes", MaxIDLen)
	}
	segs := strings.Split(id, "/")
	if len(segs) > MaxIDLevels {
		return fmt.Errorf("id %q deeper than %d levels", id, MaxIDLevels)
	}
	for _, s := range segs {
		if !validName(s, MaxIDSegmentLen) {
			return fmt.Errorf("id %q: segment %q is not 1-%d of [A-Za-z0-9_.+-]", id, clip(s), MaxIDSegmentLen)
		}
	}
	return nil
}

func validName(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_', c == '.', c == '+', c == '-':
		default:
			return false
		}
	}
	return true
}

// decodeText decodes base64 UTF-8 text within limits, refusing control
// characters (C0, DEL, C1), and removes characters that could disguise it
// (bidirectional overrides, zero-width joiners used for spoofing).
func decodeText(enc string, maxEnc, maxDec int) (string, error) {
	if len(enc) > maxEnc {
		return "", fmt.Errorf("longer than %d encoded bytes", maxEnc)
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		// Tolerate missing padding; anything else is not base64.
		raw, err = base64.RawStdEncoding.DecodeString(enc)
		if err != nil {
			return "", errors.New("not base64")
		}
	}
	if len(raw) > maxDec {
		return "", fmt.Errorf("longer than %d decoded bytes", maxDec)
	}
	if !utf8.Valid(raw) {
		return "", errors.New("not UTF-8")
	}
	s := string(raw)
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return "", fmt.Errorf("control character %U", r)
		}
	}
	return Sanitize(s), nil
}

// Sanitize removes invisible formatting characters that can make untrusted
// text display as something else: bidirectional embeddings, overrides and
// isolates, and the byte-order mark.
func Sanitize(s string) string {
	if !strings.ContainsFunc(s, isDisguise) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isDisguise(r) {
			return -1
		}
		return r
	}, s)
}

func isDisguise(r rune) bool {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x200E, r == 0x200F, r == 0x061C, r == 0xFEFF:
		return true
	}
	return false
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Encode returns the report as a complete OSC 7501 sequence ended by ST.
func (r Report) Encode() string {
	var b strings.Builder
	b.WriteString("\x1b]7501;state=")
	b.WriteString(string(r.State))
	if r.Kind != "" && r.State == Blocked {
		b.WriteString(":kind=" + string(r.Kind))
	}
	if r.Progress >= 0 && r.Progress <= 100 && (r.State == Working || r.State == Blocked) {
		b.WriteString(":progress=" + strconv.Itoa(r.Progress))
	}
	if r.App != "" {
		b.WriteString(":app=" + r.App)
	}
	if r.Title != "" {
		b.WriteString(":title=" + base64.StdEncoding.EncodeToString([]byte(r.Title)))
	}
	if r.Msg != "" {
		b.WriteString(":msg=" + base64.StdEncoding.EncodeToString([]byte(r.Msg)))
	}
	if r.ID != "" {
		b.WriteString(":id=" + r.ID)
	}
	b.WriteString("\x1b\\")
	return b.String()
}

// Validate checks that a report built by a program (not parsed) obeys the
// protocol, so Encode produces something a terminal will accept.
func (r Report) Validate() error {
	enc := r.Encode()
	body := strings.TrimSuffix(strings.TrimPrefix(enc, "\x1b]7501;"), "\x1b\\")
	if len(enc) > 4096 {
		return fmt.Errorf("report is %d bytes; the limit is 4096", len(enc))
	}
	parsed, err := Parse(body)
	if err != nil {
		return err
	}
	if parsed.Title != r.Title || parsed.Msg != r.Msg {
		return errors.New("title or msg holds characters the protocol does not carry")
	}
	return nil
}
