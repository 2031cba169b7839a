package rules

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/corral-dev/corral/internal/safefile"
)

// Generic is the manifest used when no agent is recognised.
const Generic = "generic"

// Set is the manifests in force: the embedded defaults, each overridden by
// a file of the same name in the user's folder. It is immutable.
type Set struct {
	byName map[string]*Manifest
	order  []string // sorted names, Generic last
	// builtin is what the loader's embedded folder gave, kept so that
	// the next Load from this set need not parse and compile it again
	// (embedded files never change; a load takes milliseconds).
	builtin builtinManifests
}

type builtinManifests struct {
	fsys      fs.FS
	manifests []*Manifest
	err       error
}

// ByName returns a manifest.
func (s *Set) ByName(name string) (*Manifest, bool) {
	m, ok := s.byName[name]
	return m, ok
}

// All returns the manifests, sorted by name with the generic one last.
func (s *Set) All() []*Manifest {
	out := make([]*Manifest, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, s.byName[n])
	}
	return out
}

// Names lists the manifest names.
func (s *Set) Names() []string { return append([]string(nil), s.order...) }

// Generic returns the generic manifest (always present).
func (s *Set) Generic() *Manifest { return s.byName[Generic] }

// IdentifyProcess returns the agent whose process names or argv patterns
// match, or nil.
func (s *Set) IdentifyProcess(name string, argv []string) *Manifest {
	for _, n := range s.order {
		m := s.byName[n]
		if n != Generic && m.MatchesProcess(name, argv) {
			return m
		}
	}
	return nil
}

// IdentifyScreen returns the agent whose title or screen patterns match,
// or nil.
func (s *Set) IdentifyScreen(scr Screen) *Manifest {
	title := strings.TrimSpace(scr.Title)
	var text joinedScreen
	defer text.release()
	for _, n := range s.order {
		m := s.byName[n]
		if n != Generic && m.matchesScreen(title, scr.Lines, &text) {
			return m
		}
	}
	return nil
}

// Loader builds Sets from the embedded defaults and a user folder.
// Embedded does not change while the loader is used: a reload takes the
// manifests compiled from it before.
type Loader struct {
	Embedded fs.FS // NAME.toml files at its root
	UserDir  string
}

// ConfigDir is corral's config folder: $XDG_CONFIG_HOME/corral, or
// ~/.config/corral ("" when there is no home).
func ConfigDir() string {
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "corral")
}

// DefaultUserDir is the user's rules folder: ConfigDir()/rules.
func DefaultUserDir() string {
	dir := ConfigDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "rules")
}

// Load builds a Set. A broken user file is reported and skipped, and
// prev's manifest of that name stays in force (or the embedded one when
// prev is nil): a typo never leaves an agent without rules. Broken
// embedded manifests are a build defect and also reported. The embedded
// manifests of prev, when it came from the same embedded folder, are
// taken as they are: manifests are immutable once compiled.
func (l Loader) Load(prev *Set) (*Set, []error) {
	set := &Set{byName: map[string]*Manifest{}}
	var errs []error
	if prev != nil && prev.builtin.fsys != nil && sameFS(prev.builtin.fsys, l.Embedded) {
		set.builtin = prev.builtin
	} else {
		embedded, err := LoadDir(l.Embedded, ".", "embedded:")
		set.builtin = builtinManifests{fsys: l.Embedded, manifests: embedded, err: err}
	}
	for _, m := range set.builtin.manifests {
		set.byName[m.Name] = m
	}
	if set.builtin.err != nil {
		errs = append(errs, set.builtin.err)
	}
	if l.UserDir != "" {
		user, broken, err := l.loadUser()
		if err != nil {
			errs = append(errs, err)
		}
		for _, m := range user {
			set.byName[m.Name] = m
		}
		for name, e := range broken {
			errs = append(errs, e)
			if prev != nil {
				if pm, ok := prev.byName[name]; ok {
					set.byName[name] = pm
				}
			}
		}
	}
	if _, ok := set.byName[Generic]; !ok {
		set.byName[Generic] = &Manifest{Name: Generic, Display: "shell", Source: "built-in", IdleConfirm: DefaultConfirm, Answers: map[string]string{}}
	}
	for n := range set.byName {
		if n != Generic {
			set.order = append(set.order, n)
		}
	}
	sort.Strings(set.order)
	set.order = append(set.order, Generic)
	return set, errs
}

// sameFS reports whether a and b are the same file system (an embed.FS
// is); one that cannot be compared (a map, as fstest.MapFS) is never the
// same.
func sameFS(a, b fs.FS) bool {
	return reflect.ValueOf(a).Comparable() && reflect.ValueOf(b).Comparable() && a == b
}

// loadUser parses the user's manifests. broken maps a file's base name to
// its error, so the caller can keep the previous version in force.
func (l Loader) loadUser() (ok []*Manifest, broken map[string]error, err error) {
	broken = map[string]error{}
	entries, err := os.ReadDir(l.UserDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, broken, nil
	}
	if err != nil {
		return nil, broken, fmt.Errorf("read rules folder %s: %w", l.UserDir, err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".toml") {
			continue
		}
		path := filepath.Join(l.UserDir, e.Name())
		name := strings.TrimSuffix(e.Name(), ".toml")
		m, err := ParseFile(path)
		if err != nil {
			broken[name] = err
			continue
		}
		if m.Name != name {
			broken[name] = &Error{File: path, Line: 1, Column: 1, Msg: fmt.Sprintf("name %q does not match the file name; call the file %s.toml", m.Name, m.Name)}
			continue
		}
		ok = append(ok, m)
	}
	return ok, broken, nil
}

// ParseFile reads and compiles one manifest file. Only a regular file is
// read (a FIFO or a link to a device is refused without blocking), and no
// more than MaxManifestBytes of it.
func ParseFile(path string) (*Manifest, error) {
	data, err := safefile.Read(path, MaxManifestBytes)
	if errors.Is(err, safefile.ErrTooLarge) || errors.Is(err, safefile.ErrNotRegular) {
		return nil, &Error{File: path, Msg: errors.Unwrap(err).Error()}
	}
	if err != nil {
		return nil, fmt.Errorf("load rules %s: %w", path, err)
	}
	return Parse(path, data)
}

// LoadUserDir parses every NAME.toml in a folder on disk the way the
// user's rules folder is read, and joins the problems.
func LoadUserDir(dir string) ([]*Manifest, error) {
	ok, broken, err := Loader{UserDir: dir}.loadUser()
	errs := []error{err}
	names := make([]string, 0, len(broken))
	for n := range broken {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		errs = append(errs, broken[n])
	}
	return ok, errors.Join(errs...)
}

// LoadDir parses every NAME.toml in dir of fsys. prefix is put before file
// names in Source and errors ("embedded:"). Each file must name itself.
func LoadDir(fsys fs.FS, dir, prefix string) ([]*Manifest, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read rules folder %s%s: %w", prefix, dir, err)
	}
	var out []*Manifest
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".toml") {
			continue
		}
		source := prefix + filepath.Join(dir, e.Name())
		if dir == "." {
			source = prefix + e.Name()
		}
		data, err := fs.ReadFile(fsys, filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, fmt.Errorf("load rules %s: %w", source, err))
			continue
		}
		m, err := Parse(source, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if want := strings.TrimSuffix(e.Name(), ".toml"); m.Name != want {
			errs = append(errs, &Error{File: source, Line: 1, Column: 1, Msg: fmt.Sprintf("name %q does not match the file name; call the file %s.toml", m.Name, m.Name)})
			continue
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}
