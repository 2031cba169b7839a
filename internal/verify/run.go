package verify

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/lab/mockmodel"
	"github.com/corral-dev/corral/internal/rules"
)

// Options configure a run.
type Options struct {
	Profile *Profile
	// Command runs instead of the profile's binary found on PATH.
	Command []string
	// Exe is the corral binary: it serves the private daemon and runs the
	// agent's hooks.
	Exe string
	// Rules are the rules in force, for the replays.
	Rules *rules.Set
	// RulesDir is the user's rules folder the private daemon reads ("" none).
	RulesDir string
	Scenario []Step // default the profile's, else Scenario
	Cols     int
	Rows     int
	// Settle is how long a step goes on once its state is reached: corral
	// must hold the state then.
	Settle time.Duration
	// Log gets a line per step as it happens (nil: none).
	Log io.Writer
}

// shellCommands are the shell step's commands, ones each agent asks
// before running (Claude Code runs a file change in its folder unasked).
var shellCommands = map[API]string{APIAnthropic: "ls -la /tmp", APIGemini: "touch verify-shell.txt",
	APIResponses: "touch verify-shell.txt", APIChat: "touch verify-shell.txt"}

// Run starts a private daemon, runs the agent in one of its panes against
// the scripted model server, drives it through the scenario and judges
// every step live and in replays.
func Run(ctx context.Context, o Options) (*Result, *Recording, error) {
	p := o.Profile
	if p.bad != nil {
		return nil, nil, p.bad
	}
	if o.Scenario == nil {
		o.Scenario = p.Scenario
	}
	if o.Scenario == nil {
		o.Scenario = Scenario
	}
	steps, skipped := Steps(p, o.Scenario)
	if len(steps) == 0 || steps[0].Name != "startup" || len(steps) == 1 {
		return nil, nil, fmt.Errorf("verify cannot drive %s yet: it has no scripted model server or turns", p.Name)
	}
	ss, err := openSession(ctx, &o)
	if err != nil {
		return nil, nil, err
	}
	defer ss.close()
	if err := ss.startPane(ctx); err != nil {
		return nil, nil, err
	}
	dr := &driver{o: o, d: ss.d, pane: ss.pane, cap: ss.cap, model: ss.model, work: ss.work}
	runs, err := dr.drive(ctx, steps)
	if err != nil {
		return nil, nil, err
	}
	rec := ss.finish(ctx, runs)
	rec.Skipped = skipped
	res := Judge(rec, o.Rules)
	for i, s := range res.Steps {
		rec.Steps[i].Right = s.Verdicts["live"].Right
		res.Steps[i].Right = rec.Steps[i].Right
	}
	return res, rec, nil
}

// session is one agent in a pane of a private daemon, against a scripted
// model server, with a fresh HOME.
type session struct {
	o       *Options
	command []string
	dir     string
	home    string
	work    string
	env     []string
	hookLog string
	model   *mockmodel.Server
	d       *daemon
	cap     *capture
	pane    string
	ctx     context.Context
	cancel  context.CancelFunc
	closers []func()
}

// openSession prepares a private folder, the agent's HOME, the scripted
// model server and a private daemon; the pane is started by startPane.
func openSession(ctx context.Context, o *Options) (ss *session, err error) {
	p := o.Profile
	if o.Cols == 0 {
		o.Cols, o.Rows = 120, 32
	}
	if o.Settle == 0 {
		o.Settle = time.Second
	}
	command := o.Command
	if len(command) == 0 {
		bin, err := exec.LookPath(p.Binary)
		if err != nil {
			return nil, fmt.Errorf("no %s on PATH: install it (npm install -g %s) or give the command after --", p.Binary, p.Package)
		}
		command = []string{bin}
	}
	if len(command) == 1 && filepath.Base(command[0]) == p.Binary {
		command = append(command, p.Args...)
	}
	ss = &session{o: o, command: command}
	defer func() {
		if err != nil {
			ss.close()
		}
	}()

	// A private folder under the home folder: Gemini CLI ignores the
	// hooks file corral gives it when a parent folder is writable by
	// others, as /tmp is.
	base, _ := os.UserHomeDir()
	base = filepath.Join(base, ".cache")
	if err := os.MkdirAll(base, 0o700); err != nil {
		base = ""
	}
	dir, err := os.MkdirTemp(base, "corral-verify-")
	if err != nil {
		return nil, fmt.Errorf("private folder: %w", err)
	}
	ss.dir = dir
	ss.closers = append(ss.closers, func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o700)
	ss.home, ss.work = filepath.Join(dir, "home"), filepath.Join(dir, "work")
	for _, d := range []string{ss.home, ss.work, filepath.Join(dir, "config", "corral")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if o.RulesDir != "" {
		if _, err := os.Stat(o.RulesDir); err == nil {
			_ = os.Symlink(o.RulesDir, filepath.Join(dir, "config", "corral", "rules"))
		}
	}

	model, err := startModel(p.API)
	if err != nil {
		return nil, fmt.Errorf("scripted model server: %w", err)
	}
	modelURL := ""
	if model != nil {
		model.SetLatency(p.Latency)
		ss.model = model
		ss.closers = append(ss.closers, func() { model.Close() })
		modelURL = model.URL
	}
	ss.hookLog = filepath.Join(dir, "hooks.ndjson")
	ss.env = []string{"HOME=" + ss.home, "CORRAL_HOOK_LOG=" + ss.hookLog}
	if p.Home != nil {
		extra, err := p.Home(ss.home, ss.work, modelURL)
		if err != nil {
			return nil, fmt.Errorf("prepare %s's home: %w", p.Name, err)
		}
		ss.env = append(ss.env, extra...)
	}

	d, err := startDaemon(ctx, o.Exe, dir)
	if err != nil {
		return nil, err
	}
	ss.d = d
	ss.closers = append(ss.closers, d.stop)
	return ss, nil
}

// startPane starts the agent in a pane, as corral run does, and follows
// its output and corral's states for it.
func (ss *session) startPane(ctx context.Context) error {
	o := ss.o
	ss.cap = newCapture(o.Cols, o.Rows)
	ss.cap.ready = o.Profile.Ready
	ss.closers = append(ss.closers, ss.cap.close)
	runCtx, cancel := context.WithCancel(ctx)
	ss.ctx, ss.cancel = runCtx, cancel
	ss.closers = append(ss.closers, cancel)
	events, err := ss.d.c.Stream(runCtx, "/v1/events?follow=1")
	if err != nil {
		return fmt.Errorf("event stream: %w", err)
	}
	ss.closers = append(ss.closers, func() { events.Close() })
	var pane api.Pane
	if err := ss.d.c.Do(ctx, "POST", "/v1/panes", api.RunRequest{Name: "verify", Command: ss.command, Cwd: ss.work,
		Cols: o.Cols, Rows: o.Rows, Agent: o.Profile.Rules, Env: ss.env}, &pane); err != nil {
		return fmt.Errorf("start %s in a pane: %w", strings.Join(ss.command, " "), err)
	}
	ss.pane = pane.ID
	ss.cap.t0 = time.Now()
	ws, _, err := websocket.Dial(ctx, "ws://corral/v1/panes/"+url.PathEscape(pane.ID)+"/attach", &websocket.DialOptions{HTTPClient: ss.d.c.HTTPClient()})
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	ss.closers = append(ss.closers, func() { ws.CloseNow() })
	ws.SetReadLimit(16 << 20)
	cap := ss.cap
	go func() {
		for {
			_, b, err := ws.Read(runCtx)
			if err != nil {
				return
			}
			cap.output(b)
		}
	}()
	go func() {
		sc := bufio.NewScanner(events)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			var ev eventlog.Event
			if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Pane != pane.ID {
				continue
			}
			cap.change(Point{At: cap.since(ev.Time), State: combine.State(ev.State), Kind: ev.Kind, Source: ev.Source, Rule: ev.Rule, Message: ev.Message})
		}
	}()
	return nil
}

// finish ends the daemon and assembles the recording of the run.
func (ss *session) finish(ctx context.Context, runs []StepRun) *Recording {
	var pane api.Pane
	_ = ss.d.c.Do(ctx, "GET", "/v1/panes/"+ss.pane, nil, &pane)
	ss.d.stop()
	ss.cancel()
	time.Sleep(50 * time.Millisecond) // the readers' last lines

	p := ss.o.Profile
	rec := ss.cap.recording(p, ss.command, runs, readHooks(ss.hookLog, ss.cap.t0))
	rec.Integration, rec.IntegrationOff = pane.Integration, pane.IntegrationError
	rec.Version = agentVersion(ss.command[0], p)
	return rec
}

// close undoes what the session set up, newest first.
func (ss *session) close() {
	for i := len(ss.closers) - 1; i >= 0; i-- {
		ss.closers[i]()
	}
	ss.closers = nil
}

// startModel starts the scripted model server for an API (nil for none).
// A turn without a step keyword is prose.
func startModel(api API) (*mockmodel.Server, error) {
	var model *mockmodel.Server
	var err error
	switch api {
	case APIAnthropic:
		model, err = mockmodel.Start(shellCommands[api])
	case APIGemini:
		model, err = mockmodel.StartGemini(shellCommands[api])
	case APIResponses:
		model, err = mockmodel.StartResponses(shellCommands[api])
	case APIChat:
		model, err = mockmodel.StartChat(shellCommands[api])
	}
	if model != nil {
		model.Default = mockmodel.StepProse
	}
	return model, err
}

// daemon is the run's private corral daemon.
type daemon struct {
	cmd    *exec.Cmd
	c      *client.Client
	exited chan struct{}
}

// startDaemon serves a private daemon from exe on a socket, state and
// config folder of its own in dir: the user's daemon is never touched.
func startDaemon(ctx context.Context, exe, dir string) (*daemon, error) {
	sock := filepath.Join(dir, "s.sock")
	logf, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "serve")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CORRAL_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "CORRAL_SOCKET="+sock, "CORRAL_STATE_DIR="+filepath.Join(dir, "state"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the private daemon (%s serve): %w", exe, err)
	}
	d := &daemon{cmd: cmd, c: client.New(sock), exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for d.c.Ping(ctx) != nil {
		select {
		case <-d.exited:
			log, _ := os.ReadFile(filepath.Join(dir, "daemon.log"))
			return nil, fmt.Errorf("the private daemon exited at start: %s", log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-d.exited
			return nil, errors.New("the private daemon did not answer within 15s")
		}
	}
	return d, nil
}

// stop ends the daemon and every pane (SIGHUP, then SIGKILL after its grace).
func (d *daemon) stop() {
	if d.c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = d.c.Do(ctx, "POST", "/v1/shutdown", struct{}{}, nil)
	select {
	case <-d.exited:
	case <-ctx.Done():
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	d.c = nil
}

// agentVersion asks the agent for its version ("" when it will not say).
func agentVersion(bin string, p *Profile) string {
	if filepath.Base(bin) != p.Binary || p.Name == "fake-agent" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return ""
	}
	for _, f := range strings.Fields(string(out)) {
		f = strings.TrimSuffix(f, ".")
		if len(f) > 0 && f[0] >= '0' && f[0] <= '9' && strings.Count(f, ".") >= 1 {
			return f
		}
	}
	return ""
}
