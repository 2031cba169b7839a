package status

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Report // ignored when discard
		drop bool
	}{
		{"minimal", "state=idle", Report{State: Idle, Progress: NoProgress}, false},
		{"blocked with kind and msg", "state=blocked:kind=permission:msg=" + b64("approve Bash: ls -la /tmp") + ":app=claude-code",
			Report{State: Blocked, Kind: Permission, Progress: NoProgress, App: "claude-code", Msg: "approve Bash: ls -la /tmp"}, false},
		{"keys and values trimmed", " state = working : progress = 40 ", Report{State: Working, Progress: 40}, false},
		{"progress with leading zeros", "state=working:progress=007", Report{State: Working, Progress: 7}, false},
		{"progress negative is absent", "state=working:progress=-1", Report{State: Working, Progress: NoProgress}, false},
		{"progress plus is absent", "state=working:progress=+1", Report{State: Working, Progress: NoProgress}, false},
		{"progress fraction is absent", "state=working:progress=4.5", Report{State: Working, Progress: NoProgress}, false},
		{"progress over 100 is absent", "state=working:progress=101", Report{State: Working, Progress: NoProgress}, false},
		{"progress only with working/blocked", "state=done:progress=50", Report{State: Done, Progress: NoProgress}, false},
		{"kind only with blocked", "state=working:kind=permission", Report{State: Working, Progress: NoProgress}, false},
		{"unknown kind is absent", "state=blocked:kind=coffee", Report{State: Blocked, Progress: NoProgress}, false},
		{"pair without = skipped", "state=idle:garbage", Report{State: Idle, Progress: NoProgress}, false},
		{"unknown key skipped", "state=idle:colour=blue", Report{State: Idle, Progress: NoProgress}, false},
		{"last duplicate wins", "state=idle:state=working", Report{State: Working, Progress: NoProgress}, false},
		{"child id", "state=working:id=deploy/us-east", Report{State: Working, Progress: NoProgress, ID: "deploy/us-east"}, false},
		{"clear", "state=clear:id=deploy", Report{State: Clear, Progress: NoProgress, ID: "deploy"}, false},
		{"title", "state=idle:title=" + b64("my job"), Report{State: Idle, Progress: NoProgress, Title: "my job"}, false},
		{"unpadded base64", "state=idle:title=" + strings.TrimRight(b64("ab"), "="), Report{State: Idle, Progress: NoProgress, Title: "ab"}, false},
		{"bidi override removed", "state=idle:msg=" + b64("safe\u202Etxt.exe"), Report{State: Idle, Progress: NoProgress, Msg: "safetxt.exe"}, false},

		{"no state", "kind=permission", Report{}, true},
		{"empty body", "", Report{}, true},
		{"unknown state", "state=sleeping", Report{}, true},
		{"state is case-sensitive", "state=IDLE", Report{}, true},
		{"long key", "state=idle:averyveryverylongkey=1", Report{}, true},
		{"bad app", "state=idle:app=has space", Report{}, true},
		{"long app", "state=idle:app=" + strings.Repeat("a", 33), Report{}, true},
		{"empty id", "state=clear:id=", Report{}, true},
		{"bad id never falls back to root", "state=clear:id=a//b", Report{}, true},
		{"id with bad char", "state=working:id=a b", Report{}, true},
		{"id too deep", "state=working:id=a/b/c/d/e/f/g/h/i", Report{}, true},
		{"id too long", "state=working:id=" + strings.Repeat("a/", 64) + "a", Report{}, true},
		{"id segment too long", "state=working:id=" + strings.Repeat("x", 33), Report{}, true},
		{"msg not base64", "state=idle:msg=%%%", Report{}, true},
		{"msg not UTF-8", "state=idle:msg=" + b64("\xff\xfe"), Report{}, true},
		{"msg newline", "state=idle:msg=" + b64("a\nb"), Report{}, true},
		{"msg escape", "state=idle:msg=" + b64("a\x1b[2Jb"), Report{}, true},
		{"msg DEL", "state=idle:msg=" + b64("a\x7f"), Report{}, true},
		{"msg C1", "state=idle:msg=" + b64("a\u0085"), Report{}, true},
		{"msg too long decoded", "state=idle:msg=" + b64(strings.Repeat("a", 2049)), Report{}, true},
		{"title too long", "state=idle:title=" + b64(strings.Repeat("a", 193)), Report{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.body)
			if tt.drop {
				if !errors.Is(err, ErrDiscarded) {
					t.Fatalf("Parse(%q) = %+v, %v; want discarded", tt.body, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.body, err)
			}
			if got != tt.want {
				t.Fatalf("Parse(%q) = %+v, want %+v", tt.body, got, tt.want)
			}
		})
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	reports := []Report{
		{State: Working, Progress: 40, Msg: "uploading"},
		{State: Blocked, Kind: Question, Progress: NoProgress, App: "terraform", Title: "plan", Msg: "apply 3 changes?", ID: "deploy/us-east"},
		{State: Clear, Progress: NoProgress, ID: "deploy"},
		{State: Done, Progress: NoProgress},
	}
	for _, r := range reports {
		enc := r.Encode()
		if !strings.HasPrefix(enc, "\x1b]7501;") || !strings.HasSuffix(enc, "\x1b\\") {
			t.Fatalf("Encode = %q", enc)
		}
		got, err := Parse(strings.TrimSuffix(strings.TrimPrefix(enc, "\x1b]7501;"), "\x1b\\"))
		if err != nil || got != r {
			t.Fatalf("round trip %+v: got %+v, %v", r, got, err)
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("Validate %+v: %v", r, err)
		}
	}
	if err := (Report{State: Idle, Msg: "two\nlines"}).Validate(); err == nil {
		t.Fatal("Validate accepted a newline in msg")
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func apply(t *testing.T, s *Store, body string) {
	t.Helper()
	if _, err := s.Apply(body, t0); err != nil {
		t.Fatalf("Apply(%q): %v", body, err)
	}
}

func ids(s *Store) string {
	var out []string
	for _, r := range s.Records() {
		out = append(out, fmt.Sprintf("%s=%s", r.ID, r.State))
	}
	return strings.Join(out, ",")
}

func TestStoreLifetimes(t *testing.T) {
	s := NewStore(0)
	apply(t, s, "state=working:app=deploy")
	apply(t, s, "state=working:id=us-east")
	apply(t, s, "state=blocked:id=us-east/db:kind=question")
	apply(t, s, "state=done:id=eu-west")
	apply(t, s, "state=error:id=ap-south")
	if got := ids(s); got != "=working,ap-south=error,eu-west=done,us-east=working,us-east/db=blocked" {
		t.Fatalf("records = %s", got)
	}
	// Children inherit the nearest ancestor's app.
	for _, r := range s.Records() {
		if r.App != "deploy" {
			t.Fatalf("record %q app = %q, want inherited deploy", r.ID, r.App)
		}
	}
	// Exit or a shell prompt ends working and blocked; done and error stay.
	if !s.EndTransient() {
		t.Fatal("EndTransient changed nothing")
	}
	if got := ids(s); got != "ap-south=error,eu-west=done" {
		t.Fatalf("after EndTransient = %s", got)
	}
}

func TestStoreReplaceAndClear(t *testing.T) {
	s := NewStore(0)
	apply(t, s, "state=working:progress=10:msg="+b64("a"))
	apply(t, s, "state=working")
	root, _ := s.Root()
	if root.Progress != NoProgress || root.Msg != "" {
		t.Fatalf("a report replaces its record whole: %+v", root)
	}
	apply(t, s, "state=working:id=a")
	apply(t, s, "state=working:id=a/b")
	apply(t, s, "state=working:id=ab")
	apply(t, s, "state=clear:id=a")
	if got := ids(s); got != "=working,ab=working" {
		t.Fatalf("clear a removes a and a/b only: %s", got)
	}
	apply(t, s, "state=clear")
	if s.Len() != 0 {
		t.Fatalf("clear without id leaves %s", ids(s))
	}
	apply(t, s, "state=idle")
	s.Reset()
	if s.Len() != 0 {
		t.Fatal("Reset kept records")
	}
	if _, err := s.Apply("state=clear:id=a//b", t0); err == nil || s.Discarded != 1 {
		t.Fatalf("bad id accepted (discarded=%d)", s.Discarded)
	}
}

func TestStoreLimit(t *testing.T) {
	s := NewStore(1) // raised to the protocol minimum
	for i := 0; i < MinRecordsPerPane; i++ {
		apply(t, s, fmt.Sprintf("state=working:id=job%d", i))
	}
	if s.Len() != MinRecordsPerPane || s.Evicted != 0 {
		t.Fatalf("len %d evicted %d", s.Len(), s.Evicted)
	}
	apply(t, s, "state=working:id=job0") // refresh job0: job1 is now the oldest
	apply(t, s, "state=working:id=extra")
	if s.Len() != MinRecordsPerPane || s.Evicted != 1 {
		t.Fatalf("len %d evicted %d", s.Len(), s.Evicted)
	}
	for _, r := range s.Records() {
		if r.ID == "job1" {
			t.Fatal("least recently updated record was not evicted")
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("state=blocked:kind=permission:msg=" + b64("approve Bash: ls"))
	f.Add("state=working:progress=007:id=a/b/c:app=x")
	f.Add("state=clear:id=")
	f.Add(":::=::state")
	f.Fuzz(func(t *testing.T, body string) {
		r, err := Parse(body)
		if err != nil {
			return
		}
		if len(r.Msg) > MaxMsgDecoded || len(r.Title) > MaxTitleDecoded || len(r.ID) > MaxIDLen {
			t.Fatalf("limits not enforced: %+v", r)
		}
		if strings.ContainsFunc(r.Msg+r.Title, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			t.Fatalf("control character kept: %q", r.Msg+r.Title)
		}
		s := NewStore(0)
		s.ApplyReport(r, t0)
		if r.State != Clear && s.Len() != 1 {
			t.Fatalf("store len %d after %+v", s.Len(), r)
		}
	})
}
