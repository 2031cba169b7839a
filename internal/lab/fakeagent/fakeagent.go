// Package fakeagent is a terminal program that behaves like a coding agent
// for tests and demos: it draws an input box, works with a spinner at
// 10 Hz, asks permission with a dialog whose words are placed with CSI n G
// (as Claude Code does), erases the dialog when answered, and optionally
// reports its state with OSC 7501.
//
// What the user types decides the turn: "work N" works N seconds; "ask"
// works briefly, asks permission, then finishes; "exit" and "fail" exit 0
// and 3. Keys at a prompt: 1 or Enter allow, 2 or Esc deny.
package fakeagent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/tty"
	"golang.org/x/sys/unix"
)

// Main runs the fake agent on the process's terminal and returns its exit
// status.
func Main(args []string) int {
	fs := flag.NewFlagSet("fake-agent", flag.ContinueOnError)
	osc := fs.Bool("osc7501", false, "report state with OSC 7501")
	cmd := fs.String("command", "ls -la /tmp", "the command its permission dialog asks about")
	settings := fs.String("settings", "", "Claude Code's --settings JSON: its PermissionRequest hook is run once the dialog is drawn, and its decision taken, as Claude Code does")
	hookDelay := fs.Duration("hook-delay", 0, "how long after drawing its dialog the PermissionRequest hook runs (Claude Code's reaches corral 0.1-1.5 s after it draws)")
	claim := fs.String("claim", "", "a forged report: the command its OSC 7501 report names instead (printed as \"$ CLAIM\" in its transcript first)")
	stamp := fs.String("stamp", "", "append the time (Unix ns) each dialog's last byte was written to this file")
	auto := fs.Bool("auto", false, "work on its own: cycle through work, permission prompts, questions and idle")
	seed := fs.Int64("seed", 1, "with --auto or --lab-truth: the seed of its task script")
	dropEnter := fs.Int("drop-enter", 0, "ignore the first N Enters (the text stays in its input box), as Gemini CLI once did")
	startup := fs.Duration("startup", 0, "show an initialising screen this long before its input box, and drop what is typed meanwhile (as Claude Code and Qwen Code do)")
	labTruth := fs.String("lab-truth", "", "the detector lab's agent: shape each task from the seed and write the true state to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// Raw input, but output processing stays on (the agent writes \r\n).
	restore := tty.Raw(int(os.Stdin.Fd()))
	defer restore()
	a := &agent{out: os.Stdout, osc: *osc, command: *cmd, claim: *claim, stamp: *stamp, cols: 80, rows: 24}
	if *claim != "" {
		a.transcript = append(a.transcript, "$ "+*claim)
	}
	a.permissionHook, a.hookDelay = permissionHook(*settings), *hookDelay
	a.dropEnter = *dropEnter
	a.size()
	if *startup > 0 {
		fmt.Fprint(os.Stdout, "\x1b[2J\x1b[HInitializing…")
		time.Sleep(*startup)
		_ = osproc.FlushInput(int(os.Stdin.Fd())) // keys typed meanwhile are lost
	}
	if *auto || *labTruth != "" {
		a.rng = rand.New(rand.NewSource(*seed))
	}
	if *labTruth != "" {
		if err := a.openTruth(*labTruth); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		a.lab = true
	}
	return a.run(os.Stdin)
}

type agent struct {
	osc     bool
	command string
	claim   string // what a forged report names ("": the command)
	// permissionHook is the PermissionRequest hook's command from
	// --settings ("": none).
	permissionHook string
	hookDelay      time.Duration
	dropEnter      int // Enters still to ignore
	stamp          string
	rng            *rand.Rand // set with --auto
	lab            bool       // --lab-truth
	truthFile      *os.File

	mu         sync.Mutex // guards out and the fields below
	out        io.Writer
	cols, rows int
	input      string
	transcript []string
	state      string // idle, working, blocked
	spin       int
	started    time.Time
}

func (a *agent) size() {
	ws, err := unix.IoctlGetWinsize(int(os.Stdout.Fd()), unix.TIOCGWINSZ)
	if err == nil && ws.Col > 10 && ws.Row > 10 {
		a.cols, a.rows = int(ws.Col), int(ws.Row)
	}
}

func (a *agent) run(in io.Reader) int {
	a.truth(TruthIdle)
	a.mu.Lock()
	a.write("\x1b]0;✳ Fake Agent\a\x1b[2J")
	a.report("state=idle:app=fake-agent")
	a.state = "idle"
	a.drawLocked()
	a.mu.Unlock()

	keys := make(chan byte, 64)
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := in.Read(buf)
			for _, b := range buf[:n] {
				keys <- b
			}
			if err != nil {
				close(keys)
				return
			}
		}
	}()
	if a.rng != nil && !a.lab {
		return a.autoLoop(keys)
	}
	for {
		b, ok := <-keys
		if !ok {
			return 0
		}
		switch {
		case b == 3: // Ctrl-C
			return 130
		case b == 4: // Ctrl-D
			return 0
		case (b == '\r' || b == '\n') && a.dropEnter > 0:
			a.dropEnter--
		case b == '\r' || b == '\n':
			a.mu.Lock()
			task := strings.TrimSpace(a.input)
			a.input = ""
			a.mu.Unlock()
			if code, exit := a.turn(task, keys); exit {
				return code
			}
		case b == 127 || b == 8:
			a.mu.Lock()
			if a.input != "" {
				a.input = a.input[:len(a.input)-1]
			}
			a.drawLocked()
			a.mu.Unlock()
		case b >= 0x20:
			a.mu.Lock()
			a.input += string(b)
			a.drawLocked()
			a.mu.Unlock()
		}
	}
}

// turn runs one task; exit reports that the agent should exit with code.
func (a *agent) turn(task string, keys <-chan byte) (code int, exit bool) {
	fields := strings.Fields(task)
	verb := ""
	if len(fields) > 0 {
		verb = fields[0]
	}
	switch verb {
	case "exit":
		return 0, true
	case "fail":
		return 3, true
	}
	if a.lab {
		a.labTurn(task, keys)
		return 0, false
	}
	a.say("❯ " + task)
	switch verb {
	case "ask":
		a.work(500 * time.Millisecond)
		if !a.ask(keys) {
			a.finish("Interrupted · What should Fake Agent do instead?", "idle")
			return 0, false
		}
		a.work(500 * time.Millisecond)
	case "work":
		d := time.Second
		if len(fields) > 1 {
			if s, err := strconv.ParseFloat(fields[1], 64); err == nil && s >= 0 && s < 3600 {
				d = time.Duration(s * float64(time.Second))
			}
		}
		a.work(d)
	default:
		a.work(time.Second)
	}
	a.finish("● Done. I did what you asked.", "done")
	return 0, false
}

func (a *agent) work(d time.Duration) {
	a.mu.Lock()
	a.state, a.started = "working", time.Now()
	a.report("state=working")
	a.drawLocked()
	a.mu.Unlock()
	deadline := time.Now().Add(d)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for time.Now().Before(deadline) {
		<-t.C
		a.mu.Lock()
		a.spin++
		a.spinnerLocked()
		a.mu.Unlock()
	}
}

func (a *agent) finish(line, report string) {
	a.mu.Lock()
	a.transcript = append(a.transcript, line)
	a.state = "idle"
	a.report("state=" + report)
	a.drawLocked()
	a.mu.Unlock()
}

func (a *agent) say(line string) {
	a.mu.Lock()
	a.transcript = append(a.transcript, line)
	a.mu.Unlock()
}

// ask draws the permission dialog and waits for an answer.
func (a *agent) ask(keys <-chan byte) bool { return a.askFor(keys, 0) }

// askFor is ask that gives up after wait (0: never), as if allowed.
func (a *agent) askFor(keys <-chan byte, wait time.Duration) bool {
	a.mu.Lock()
	a.state = "blocked"
	claimed := a.command
	if a.claim != "" {
		claimed = a.claim
	}
	a.report("state=blocked:kind=permission:msg=" + base64.StdEncoding.EncodeToString([]byte("approve Bash: "+claimed)))
	top := a.rows - 7
	// The box and footer go; the dialog takes their place.
	a.write(fmt.Sprintf("\x1b[%d;1H\x1b[J", top))
	a.write("\x1b[38;5;244m" + strings.Repeat("─", a.cols) + "\x1b[39m\r\x1b[1B")
	a.write(" \x1b[1mBash command\x1b[22m\r\x1b[1B")
	a.write("   " + a.command + "\r\x1b[1B")
	// Words placed one by one with CSI n G, as Ink does.
	col := 2
	for _, w := range []string{"Do", "you", "want", "to", "proceed?"} {
		a.write(fmt.Sprintf("\x1b[%dG%s", col, w))
		col += len(w) + 1
	}
	a.write("\r\x1b[1B \x1b[38;5;153m❯\x1b[39m 1. Yes\r\x1b[1B   2. No\r\x1b[1B \x1b[2mEsc to cancel · Tab to amend\x1b[22m")
	if a.stamp != "" {
		if f, err := os.OpenFile(a.stamp, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			fmt.Fprintf(f, "%d\n", time.Now().UnixNano())
			f.Close()
		}
	}
	a.mu.Unlock()
	var timeout <-chan time.Time
	if wait > 0 {
		timeout = time.After(wait)
	}
	decided := make(chan byte, 1)
	if a.permissionHook != "" {
		// The dialog is up while the hook runs; its decision answers it.
		go func() {
			time.Sleep(a.hookDelay)
			if d := a.runPermissionHook(); d != 0 {
				decided <- d
			}
		}()
	}
	for {
		var b byte
		var ok bool
		select {
		case b, ok = <-keys:
		case b = <-decided:
			ok = true
		case <-timeout:
			b, ok = '1', true
		}
		if !ok {
			return false
		}
		allow := b == '1' || b == '\r' || b == 'y'
		deny := b == '2' || b == 0x1b || b == 'n'
		if !allow && !deny {
			continue
		}
		a.mu.Lock()
		// Erase the dialog the way Ink does: cursor up to its top, erase below.
		a.write(fmt.Sprintf("\r\x1b[%dA\x1b[J", 6))
		a.state = "working"
		a.drawLocked()
		a.mu.Unlock()
		return allow
	}
}

func (a *agent) report(body string) {
	if a.osc {
		a.write("\x1b]7501;" + body + "\x1b\\")
	}
}

func (a *agent) write(s string) { _, _ = io.WriteString(a.out, s) }

var spinner = []string{"✻", "✶", "✳", "✢", "·", "*"}

// spinnerLocked redraws the spinner row in place (~60 bytes a frame).
func (a *agent) spinnerLocked() {
	secs := int(time.Since(a.started).Seconds())
	a.write(fmt.Sprintf("\x1b[%d;1H\r\x1b[38;5;174m%s\x1b[39m Working… (%ds · esc to interrupt)\x1b[K", a.rows-4, spinner[a.spin%len(spinner)], secs))
}

// drawLocked redraws the whole screen for the current state.
func (a *agent) drawLocked() {
	a.write("\x1b[?25l\x1b[H\x1b[2J")
	history := a.transcript
	room := a.rows - 6
	if len(history) > room {
		history = history[len(history)-room:]
	}
	for i, line := range history {
		a.write(fmt.Sprintf("\x1b[%d;1H%s", i+1, clip(line, a.cols)))
	}
	rule := "\x1b[38;5;244m" + strings.Repeat("─", a.cols) + "\x1b[39m"
	if a.state == "working" {
		a.spinnerLocked()
	}
	a.write(fmt.Sprintf("\x1b[%d;1H%s\r\n❯ %s\r\n%s\r\n", a.rows-3, rule, a.input, rule))
	if a.state == "working" {
		a.write("  esc to interrupt")
	} else {
		a.write("  ? for shortcuts")
	}
	a.write(fmt.Sprintf("\x1b[%d;%dH\x1b[?25h", a.rows-2, 3+len(a.input)))
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

// permissionHook finds the PermissionRequest hook's command in Claude
// Code's --settings JSON.
func permissionHook(settings string) string {
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if settings == "" || json.Unmarshal([]byte(settings), &s) != nil {
		return ""
	}
	for _, g := range s.Hooks["PermissionRequest"] {
		for _, h := range g.Hooks {
			if h.Command != "" {
				return h.Command
			}
		}
	}
	return ""
}

// runPermissionHook runs the hook with the request, as Claude Code does,
// and reads its decision: '1' allowed, '2' denied, 0 none (the person's).
func (a *agent) runPermissionHook() byte {
	payload, _ := json.Marshal(map[string]any{"hook_event_name": "PermissionRequest", "session_id": "fake-session",
		"tool_name": "Bash", "tool_input": map[string]any{"command": a.command, "description": "the fake agent's command"}})
	cmd := exec.Command("sh", "-c", a.permissionHook)
	cmd.Stdin = bytes.NewReader(payload)
	out, err := cmd.Output()
	if err != nil {
		return 0
	}
	var res struct {
		Specific struct {
			Decision struct {
				Behavior string `json:"behavior"`
			} `json:"decision"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal(bytes.TrimSpace(out), &res) != nil {
		return 0
	}
	switch res.Specific.Decision.Behavior {
	case "allow":
		return '1'
	case "deny":
		return '2'
	}
	return 0
}
