// Package notify tells a person when a pane needs them: desktop
// notifications, a bell and OSC 9/777 to attached terminals, a webhook, or
// a command of the user's. Every sink is best effort and runs apart from
// the event path; a cooldown per pane and state stops repeats from a
// flickering redraw.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/eventlog"
)

// Config is the [notify] table of the user's config file.
type Config struct {
	// On lists the states that notify (default: blocked).
	On []string `toml:"on"`
	// Cooldown between two notifications of one pane's same state.
	Cooldown string `toml:"cooldown"`
	// Desktop sends desktop notifications (notify-send), when available.
	Desktop *bool `toml:"desktop"`
	// Bell sends BEL and OSC 9/777 to attached terminals.
	Bell *bool `toml:"bell"`
	// Webhook is a URL that gets a JSON POST (ntfy: the server's URL with
	// WebhookTopic set).
	Webhook      string `toml:"webhook"`
	WebhookTopic string `toml:"webhook_topic"`
	// Command runs with the text as its last argument and the event as
	// JSON on stdin.
	Command []string `toml:"command"`
}

// DefaultCooldown applies when Config.Cooldown is empty.
const DefaultCooldown = 30 * time.Second

// Notifier decides which events notify and sends them.
type Notifier struct {
	on       map[string]bool
	cooldown time.Duration
	desktop  bool
	bell     bool
	webhook  string
	topic    string
	command  []string
	// ToAttached writes bytes to every terminal attached to the pane.
	ToAttached func(pane string, b []byte)
	// Logf reports sink failures.
	Logf func(format string, args ...any)
	// now is the clock (tests replace it).
	now func() time.Time

	mu   sync.Mutex // guards last
	last map[string]time.Time
	wg   sync.WaitGroup
}

// New checks a config and returns its notifier.
func New(c Config) (*Notifier, error) {
	n := &Notifier{on: map[string]bool{}, cooldown: DefaultCooldown, desktop: true, bell: true,
		webhook: c.Webhook, topic: c.WebhookTopic, command: c.Command, now: time.Now, last: map[string]time.Time{},
		Logf: func(string, ...any) {}}
	if len(c.On) == 0 {
		c.On = []string{"blocked"}
	}
	for _, s := range c.On {
		switch s {
		case "blocked", "done", "error", "exited", "idle", "working":
			n.on[s] = true
		default:
			return nil, fmt.Errorf("notify.on: unknown state %q; use blocked, done, error or exited", s)
		}
	}
	if c.Cooldown != "" {
		d, err := time.ParseDuration(c.Cooldown)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("notify.cooldown %q must be a duration like 30s", c.Cooldown)
		}
		n.cooldown = d
	}
	if c.Desktop != nil {
		n.desktop = *c.Desktop
	}
	if c.Bell != nil {
		n.bell = *c.Bell
	}
	if c.Webhook != "" && !strings.HasPrefix(c.Webhook, "http://") && !strings.HasPrefix(c.Webhook, "https://") {
		return nil, fmt.Errorf("notify.webhook %q must be an http or https URL", c.Webhook)
	}
	return n, nil
}

// Text is what a notification says: which pane, which agent, and why.
func Text(ev eventlog.Event) string {
	name := ev.Name
	if name == "" {
		name = ev.Pane
	}
	why := ev.Message
	if why == "" {
		why = ev.State
		if ev.Kind != "" {
			why += " (" + ev.Kind + ")"
		}
		if ev.ExitCode != nil {
			why += fmt.Sprintf(" with status %d", *ev.ExitCode)
		}
	}
	return fmt.Sprintf("%s · %s · %s", name, ev.Agent, why)
}

// Forget drops a removed pane's cooldowns.
func (n *Notifier) Forget(pane string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for key := range n.last {
		if strings.HasPrefix(key, pane+"\x00") {
			delete(n.last, key)
		}
	}
}

// Event considers one state change and sends what it deserves. It never
// blocks on a sink.
func (n *Notifier) Event(ev eventlog.Event) bool {
	// A stalled headless job needs a person as much as a block does.
	stalled := ev.Kind == "stalled" && ev.PreviousKind != "stalled" && n.on["blocked"]
	if !stalled && (!n.on[ev.State] || ev.Previous == ev.State) {
		return false
	}
	key := ev.Pane + "\x00" + ev.State + "\x00" + ev.Kind
	now := n.now()
	n.mu.Lock()
	if last, ok := n.last[key]; ok && now.Sub(last) < n.cooldown {
		n.mu.Unlock()
		return false
	}
	n.last[key] = now
	n.mu.Unlock()

	text := Text(ev)
	title := "corral: " + ev.State
	if n.bell && n.ToAttached != nil {
		// BEL, then the two common notification sequences (iTerm2, urxvt/foot).
		clean := strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || r == ';' {
				return ' '
			}
			return r
		}, text)
		n.ToAttached(ev.Pane, []byte("\a\x1b]9;"+clean+"\x1b\\\x1b]777;notify;"+title+";"+clean+"\x1b\\"))
	}
	n.async(func() {
		if n.desktop {
			if path, err := exec.LookPath("notify-send"); err == nil {
				n.run([]string{path, "--app-name=corral", title, text}, nil)
			}
		}
		if n.webhook != "" {
			n.post(ev, title, text)
		}
		if len(n.command) > 0 {
			body, _ := json.Marshal(ev)
			n.run(append(append([]string(nil), n.command...), text), body)
		}
	})
	return true
}

func (n *Notifier) async(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Wait waits for sinks in flight (shutdown, tests).
func (n *Notifier) Wait() { n.wg.Wait() }

func (n *Notifier) run(argv []string, stdin []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), "CORRAL_NOTIFICATION=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		n.Logf("notify: %s: %v: %s", argv[0], err, bytes.TrimSpace(out))
	}
}

// webhookBody is the JSON a webhook gets. topic/title/message are what
// ntfy reads; event is the whole state change.
type webhookBody struct {
	Topic   string         `json:"topic,omitempty"`
	Title   string         `json:"title"`
	Message string         `json:"message"`
	Event   eventlog.Event `json:"event"`
}

func (n *Notifier) post(ev eventlog.Event, title, text string) {
	body, _ := json.Marshal(webhookBody{Topic: n.topic, Title: title, Message: text, Event: ev})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.webhook, bytes.NewReader(body))
	if err != nil {
		n.Logf("notify: webhook: %v", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		n.Logf("notify: webhook: %v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		n.Logf("notify: webhook answered %s", resp.Status)
	}
}
