// Package agentdef is the registry of the agents corral knows: each one's
// agents/NAME/agent.toml compiled once, strictly (an unknown key is an
// error at file:line:column). Doctor, completion, corral exec's names,
// verify's profiles and docs read it instead of lists of their own.
//
// The data names the Go parts an agent needs where behaviour cannot be
// data: its hooks integration (internal/agents), its headless stream
// dialect (internal/headless) and its verify home (internal/verify).
// Tests in those packages fail when a name has no Go part.
package agentdef

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	agentsdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/tomlfile"
)

// Agent is one agent's description.
type Agent struct {
	Name     string // corral's name for it: its folder and its manifest's name
	Title    string // as people call it ("Claude Code")
	Binary   string // its command on PATH
	Install  Install
	Hooks    Hooks
	Headless Headless
	Restore  Restore
	Verify   Verify
	Source   string // "embedded:NAME/agent.toml"
}

// Install is how to install it.
type Install struct {
	NPM string // its npm package
	// Verified is the version corral verify last passed (docs/agents.md).
	Verified string
}

// Hooks names its hooks integration in internal/agents ("": none, corral
// reads its screen).
type Hooks struct {
	Integration string
	Summary     string // how its hooks reach corral, for docs/agents.md ("hooks (`--settings`)")
}

// Headless is how corral exec runs it.
type Headless struct {
	Exec    string // the name corral exec --agent takes ("": none)
	Dialect string // the stream internal/headless parses: claude, codex or gemini
}

// Restore is how corral restore resumes its conversation.
type Restore struct {
	// Resume is put after the agent's command, {id} replaced by the
	// conversation's id; nil: it cannot be resumed.
	Resume []string
	// NamedBy are flags that already name a conversation: a command with
	// one starts as it was.
	NamedBy []string
	// NoSubcommand: Resume is a subcommand, so a command that runs one
	// cannot be resumed.
	NoSubcommand bool
}

// Verify is how corral verify runs it against a scripted model.
type Verify struct {
	API     string            // the model API it speaks (one of APIs)
	Reports bool              // it speaks OSC 7501 and its reports are the truth
	Args    []string          // put after its binary
	Ready   string            // text on its screen once it takes input
	Home    string            // the Go function that prepares its HOME (internal/verify)
	Prelude map[string]string // first-start screens: text on screen → keys
	Skip    map[string]string // scenario steps it cannot take → why
	Keys    map[string]string // yes, no, option, interrupt → keys, over its manifest's answers
	Latency time.Duration     // how long the scripted model waits before each answer
	// Variants are further profiles of the same agent started another
	// way (Claude Code in its default auto mode), each with a scenario
	// of its own.
	Variants []Variant
}

// Variant is a verify profile of an agent started another way: the
// agent's [verify] with its own arguments, ready text and scenario.
type Variant struct {
	Name     string   // the profile's name: the agent's and this ("claude-code" + "auto")
	Args     []string // put after its binary instead of [verify] args (nil: none)
	Ready    string   // text on its screen once it takes input ("": [verify] ready)
	Scenario string   // the scenario internal/verify runs ("": the default)
}

// APIs are the model APIs the scripted model speaks.
var APIs = []string{"anthropic", "gemini", "openai-responses", "openai-chat"}

// Dialects are the headless stream dialects (internal/headless's formats).
var Dialects = []string{"claude", "codex", "gemini"}

// Keys are the keys a verify profile may override.
var Keys = []string{"yes", "no", "option", "interrupt"}

// NotAgents are folders beside the agents that hold only a manifest.
var NotAgents = []string{"generic"}

// file is agent.toml as written.
type file struct {
	Name    string `toml:"name"`
	Title   string `toml:"title"`
	Binary  string `toml:"binary"`
	Install struct {
		NPM      string `toml:"npm"`
		Verified string `toml:"verified"`
	} `toml:"install"`
	Hooks struct {
		Integration string `toml:"integration"`
		Summary     string `toml:"summary"`
	} `toml:"hooks"`
	Headless struct {
		Exec    string `toml:"exec"`
		Dialect string `toml:"dialect"`
	} `toml:"headless"`
	Restore struct {
		Resume       []string `toml:"resume"`
		NamedBy      []string `toml:"named_by"`
		NoSubcommand bool     `toml:"no_subcommand"`
	} `toml:"restore"`
	Verify struct {
		API     string            `toml:"api"`
		Reports bool              `toml:"reports"`
		Args    []string          `toml:"args"`
		Ready   string            `toml:"ready"`
		Home    string            `toml:"home"`
		Prelude map[string]string `toml:"prelude"`
		Skip    map[string]string `toml:"skip"`
		Keys    map[string]string `toml:"keys"`
		Latency string            `toml:"latency"`
		Variant []struct {
			Name     string   `toml:"name"`
			Args     []string `toml:"args"`
			Ready    string   `toml:"ready"`
			Scenario string   `toml:"scenario"`
		} `toml:"variant"`
	} `toml:"verify"`
}

var (
	nameRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]*$`) })
	versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`) })
)

// Parse compiles one agent.toml. source names it in errors
// ("embedded:crush/agent.toml"); folder is the folder it is in, whose name
// the agent must have.
func Parse(source, folder string, data []byte) (*Agent, error) {
	var f file
	if err := tomlfile.Decode("agent", source, data, &f, "docs/adding-an-agent.md lists the keys"); err != nil {
		return nil, err
	}
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("agent %s:%d: %s: %s", source, lineOf(data, key), key, fmt.Sprintf(format, args...))
	}
	a := &Agent{Name: f.Name, Title: f.Title, Binary: f.Binary, Source: source,
		Install:  Install{NPM: f.Install.NPM, Verified: f.Install.Verified},
		Hooks:    Hooks{Integration: f.Hooks.Integration, Summary: f.Hooks.Summary},
		Headless: Headless{Exec: f.Headless.Exec, Dialect: f.Headless.Dialect},
		Restore:  Restore{Resume: f.Restore.Resume, NamedBy: f.Restore.NamedBy, NoSubcommand: f.Restore.NoSubcommand},
		Verify: Verify{API: f.Verify.API, Reports: f.Verify.Reports, Args: f.Verify.Args, Ready: f.Verify.Ready,
			Home: f.Verify.Home, Prelude: f.Verify.Prelude, Skip: f.Verify.Skip, Keys: f.Verify.Keys}}
	switch {
	case !nameRE().MatchString(a.Name):
		return nil, bad("name", "%q: lower-case letters, digits and dashes", a.Name)
	case a.Name != folder:
		return nil, bad("name", "%q is not its folder's name %q: name the folder %s", a.Name, folder, a.Name)
	case a.Title == "":
		return nil, bad("title", "missing: how people call it (\"Crush\")")
	case a.Binary == "" || strings.ContainsAny(a.Binary, "/ "):
		return nil, bad("binary", "%q: its command's name on PATH", a.Binary)
	case a.Install.NPM == "":
		return nil, bad("npm", "missing: its npm package")
	case !versionRE().MatchString(a.Install.Verified):
		return nil, bad("verified", "%q: the version corral verify passed, as MAJOR.MINOR.PATCH", a.Install.Verified)
	case (a.Hooks.Integration == "") != (a.Hooks.Summary == ""):
		return nil, bad("hooks", "integration and summary go together: both or neither")
	case a.Headless.Exec != "" && (!nameRE().MatchString(a.Headless.Exec) || a.Headless.Exec == "auto" || a.Headless.Exec == "acp"):
		return nil, bad("exec", "%q: a name of its own (auto and acp are corral exec's)", a.Headless.Exec)
	case (a.Headless.Exec == "") != (a.Headless.Dialect == ""):
		return nil, bad("headless", "exec and dialect go together: both or neither")
	case a.Headless.Dialect != "" && !slices.Contains(Dialects, a.Headless.Dialect):
		return nil, bad("dialect", "%q: one of %s", a.Headless.Dialect, strings.Join(Dialects, ", "))
	case a.Restore.Resume != nil && !slices.Contains(a.Restore.Resume, "{id}"):
		return nil, bad("resume", "%q has no {id} for the conversation", a.Restore.Resume)
	case a.Restore.Resume == nil && (a.Restore.NamedBy != nil || a.Restore.NoSubcommand):
		return nil, bad("restore", "named_by and no_subcommand need resume")
	case !slices.Contains(APIs, a.Verify.API):
		return nil, bad("api", "%q: one of %s", a.Verify.API, strings.Join(APIs, ", "))
	case a.Verify.Ready == "":
		return nil, bad("ready", "missing: text on its screen once it takes input")
	}
	for k := range a.Verify.Keys {
		if !slices.Contains(Keys, k) {
			return nil, bad("keys", "%q: keys are %s", k, strings.Join(Keys, ", "))
		}
	}
	if f.Verify.Latency != "" {
		d, err := time.ParseDuration(f.Verify.Latency)
		if err != nil || d < 0 || d > 10*time.Second {
			return nil, bad("latency", "%q: a duration from 0s to 10s", f.Verify.Latency)
		}
		a.Verify.Latency = d
	}
	for i, v := range f.Verify.Variant {
		name := a.Name + "-" + v.Name
		badVariant := func(format string, args ...any) error {
			return fmt.Errorf("agent %s:%d: [[verify.variant]] %q: %s", source, nthLine(data, "[[verify.variant]]", i), v.Name, fmt.Sprintf(format, args...))
		}
		switch {
		case !nameRE().MatchString(v.Name):
			return nil, badVariant("name: lower-case letters, digits and dashes")
		case slices.ContainsFunc(a.Verify.Variants, func(o Variant) bool { return o.Name == name }):
			return nil, badVariant("name: a second variant of that name")
		}
		ready := v.Ready
		if ready == "" {
			ready = a.Verify.Ready
		}
		a.Verify.Variants = append(a.Verify.Variants, Variant{Name: name, Args: v.Args, Ready: ready, Scenario: v.Scenario})
	}
	return a, nil
}

// lineOf is the line where key is set in data (1 when it is not there).
func lineOf(data []byte, key string) int {
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, key); ok && strings.HasPrefix(strings.TrimSpace(rest), "=") || line == "["+key+"]" {
			return i + 1
		}
	}
	return 1
}

// nthLine is the line of the n-th (from 0) line that is text (1 when there
// is none).
func nthLine(data []byte, text string, n int) int {
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == text {
			if n == 0 {
				return i + 1
			}
			n--
		}
	}
	return 1
}

// Registry is every agent, in folder order.
type Registry struct {
	agents []*Agent
}

// Load compiles NAME/agent.toml of every folder of fsys. Every folder
// holds a rules.toml, and an agent.toml unless it is one of NotAgents.
// prefix goes before file names in errors ("embedded:").
func Load(fsys fs.FS, prefix string) (*Registry, error) {
	dirs, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read agents folder %s: %w", prefix, err)
	}
	r := &Registry{}
	var errs []error
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		if _, err := fs.Stat(fsys, path.Join(d.Name(), "rules.toml")); err != nil {
			errs = append(errs, fmt.Errorf("agent %s%s: no rules.toml: every agent has a screen manifest", prefix, d.Name()))
		}
		source := prefix + path.Join(d.Name(), "agent.toml")
		data, err := fs.ReadFile(fsys, path.Join(d.Name(), "agent.toml"))
		switch {
		case errors.Is(err, fs.ErrNotExist) && slices.Contains(NotAgents, d.Name()):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("agent %s: %w", source, err))
			continue
		case slices.Contains(NotAgents, d.Name()):
			errs = append(errs, fmt.Errorf("agent %s: %s holds only a manifest, never an agent", source, d.Name()))
			continue
		}
		a, err := Parse(source, d.Name(), data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range r.agents {
			for _, v := range append(o.Verify.Variants, a.Verify.Variants...) {
				if v.Name == a.Name || v.Name == o.Name {
					errs = append(errs, fmt.Errorf("agent %s: verify variant %q is an agent's name", source, v.Name))
				}
			}
			switch {
			case o.Binary == a.Binary:
				errs = append(errs, fmt.Errorf("agent %s: binary %q is %s's too", source, a.Binary, o.Name))
			case a.Headless.Exec != "" && o.Headless.Exec == a.Headless.Exec:
				errs = append(errs, fmt.Errorf("agent %s: exec %q is %s's too", source, a.Headless.Exec, o.Name))
			}
		}
		r.agents = append(r.agents, a)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

var builtIn = sync.OnceValues(func() (*Registry, error) { return Load(agentsdata.FS, "embedded:") })

// BuiltIn is the registry of the agents embedded in corral. They are
// checked by this package's tests: a broken one is a build defect.
func BuiltIn() *Registry {
	r, err := builtIn()
	if err != nil {
		panic(err)
	}
	return r
}

// All is every agent, by name.
func (r *Registry) All() []*Agent { return r.agents }

// Names are the agents' names.
func (r *Registry) Names() []string {
	var out []string
	for _, a := range r.agents {
		out = append(out, a.Name)
	}
	return out
}

// ByName is the agent of that name or binary.
func (r *Registry) ByName(name string) (*Agent, bool) {
	for _, a := range r.agents {
		if a.Name == name || a.Binary == name {
			return a, true
		}
	}
	return nil, false
}

// ByExec is the agent corral exec --agent NAME runs.
func (r *Registry) ByExec(exec string) (*Agent, bool) {
	for _, a := range r.agents {
		if exec != "" && a.Headless.Exec == exec {
			return a, true
		}
	}
	return nil, false
}

// ExecNames are the names corral exec --agent takes for agents' streams,
// sorted.
func (r *Registry) ExecNames() []string {
	var out []string
	for _, a := range r.agents {
		if a.Headless.Exec != "" {
			out = append(out, a.Headless.Exec)
		}
	}
	slices.Sort(out)
	return out
}

// Join joins words as a sentence does: "a, b or c" with conj "or".
func Join(words []string, conj string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}
