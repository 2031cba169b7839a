package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/eventlog"
)

func blocked(pane string) eventlog.Event {
	return eventlog.Event{Pane: pane, Name: "fp", Agent: "claude-code", State: "blocked", Kind: "permission",
		Message: "approve Bash: ls -la /tmp", Previous: "working"}
}

func TestText(t *testing.T) {
	if got := Text(blocked("p1")); got != "fp · claude-code · approve Bash: ls -la /tmp" {
		t.Fatalf("Text = %q", got)
	}
	code := 2
	if got := Text(eventlog.Event{Pane: "p2", Agent: "generic", State: "exited", ExitCode: &code}); got != "p2 · generic · exited with status 2" {
		t.Fatalf("Text = %q", got)
	}
}

func TestWhichEventsNotify(t *testing.T) {
	no := false
	n, err := New(Config{On: []string{"blocked", "error"}, Desktop: &no})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1000, 0)
	n.now = func() time.Time { return clock }
	var mu sync.Mutex
	var attached []string
	n.ToAttached = func(pane string, b []byte) {
		mu.Lock()
		attached = append(attached, pane+":"+string(b))
		mu.Unlock()
	}
	if !n.Event(blocked("p1")) {
		t.Fatal("a new block did not notify")
	}
	// A flickering redraw: blocked again within the cooldown.
	clock = clock.Add(10 * time.Second)
	if n.Event(blocked("p1")) {
		t.Fatal("notified within the cooldown")
	}
	if !n.Event(blocked("p2")) {
		t.Fatal("the cooldown is per pane")
	}
	clock = clock.Add(21 * time.Second)
	if !n.Event(blocked("p1")) {
		t.Fatal("no notification after the cooldown")
	}
	if n.Event(eventlog.Event{Pane: "p1", State: "done", Previous: "working"}) {
		t.Fatal("done notified without being configured")
	}
	if n.Event(eventlog.Event{Pane: "p3", State: "blocked", Previous: "blocked", Message: "x"}) {
		t.Fatal("not a change into blocked")
	}
	// A removed pane's cooldowns go with it (its id is not reused, but the
	// entries would pile up).
	n.Forget("p2")
	n.mu.Lock()
	for key := range n.last {
		if strings.HasPrefix(key, "p2\x00") {
			t.Errorf("p2's cooldown kept after Forget: %q", key)
		}
	}
	kept := len(n.last)
	n.mu.Unlock()
	if kept == 0 {
		t.Error("Forget dropped another pane's cooldowns")
	}
	if len(attached) != 3 || !strings.HasPrefix(attached[0], "p1:\a\x1b]9;fp · claude-code · approve Bash: ls -la /tmp\x1b\\\x1b]777;notify;corral: blocked;") {
		t.Fatalf("attached: %q", attached)
	}
}

func TestWebhookAndCommand(t *testing.T) {
	var got webhookBody
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &got)
		close(done)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "out")
	no := false
	n, err := New(Config{Webhook: srv.URL, WebhookTopic: "agents", Desktop: &no,
		Command: []string{"sh", "-c", `printf '%s|' "$1" > ` + out + `; cat >> ` + out, "notify"}})
	if err != nil {
		t.Fatal(err)
	}
	n.Event(blocked("p1"))
	n.Wait()
	<-done
	if got.Topic != "agents" || got.Message != "fp · claude-code · approve Bash: ls -la /tmp" || got.Event.Pane != "p1" {
		t.Fatalf("webhook got %+v", got)
	}
	b, _ := os.ReadFile(out)
	if !strings.HasPrefix(string(b), "fp · claude-code · approve Bash: ls -la /tmp|{") || !strings.Contains(string(b), `"pane":"p1"`) {
		t.Fatalf("command got %q", b)
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []Config{{On: []string{"sleepy"}}, {Cooldown: "soon"}, {Webhook: "ftp://x"}} {
		if _, err := New(c); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}
