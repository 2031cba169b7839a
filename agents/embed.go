// Package agentsdata embeds the built-in agents: one folder per agent,
// NAME/, holding its description (agent.toml, read by internal/agentdef)
// and its screen manifest (rules.toml, read by internal/rules). generic/
// holds only the manifest for shells: it is no agent.
package agentsdata

import (
	"embed"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// FS holds every agent's folder.
//
//go:embed */agent.toml */rules.toml
var FS embed.FS

// Rules is the manifests as rules.Loader reads them: NAME.toml at its root
// for NAME/rules.toml, so their sources stay "embedded:NAME.toml".
var Rules = RulesView{FS}

// RulesView shows NAME/rules.toml of a folder of agents as NAME.toml.
type RulesView struct{ Agents fs.FS }

// Open opens NAME.toml, or "." (its root, read by ReadDir).
func (v RulesView) Open(name string) (fs.File, error) {
	if name == "." {
		return v.Agents.Open(".")
	}
	inner, ok := v.inner(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f, err := v.Agents.Open(inner)
	if err != nil {
		return nil, err
	}
	return renamed{f, name}, nil
}

// renamed is NAME/rules.toml opened as NAME.toml.
type renamed struct {
	fs.File
	name string
}

func (r renamed) Stat() (fs.FileInfo, error) {
	info, err := r.File.Stat()
	if err != nil {
		return nil, err
	}
	return entry{name: r.name, FileInfo: info}, nil
}

// ReadFile reads NAME.toml.
func (v RulesView) ReadFile(name string) ([]byte, error) {
	inner, ok := v.inner(name)
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return fs.ReadFile(v.Agents, inner)
}

// ReadDir lists NAME.toml for every NAME/rules.toml, sorted by name.
func (v RulesView) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	dirs, err := fs.ReadDir(v.Agents, ".")
	if err != nil {
		return nil, err
	}
	var out []fs.DirEntry
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		info, err := fs.Stat(v.Agents, path.Join(d.Name(), "rules.toml"))
		if err != nil {
			continue
		}
		out = append(out, entry{name: d.Name() + ".toml", FileInfo: info})
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

func (v RulesView) inner(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ".toml")
	if !ok || base == "" || strings.Contains(base, "/") || !fs.ValidPath(name) {
		return "", false
	}
	return path.Join(base, "rules.toml"), true
}

type entry struct {
	name string
	fs.FileInfo
}

func (e entry) Name() string               { return e.name } // both fs.DirEntry's and fs.FileInfo's
func (e entry) Type() fs.FileMode          { return e.FileInfo.Mode().Type() }
func (e entry) Info() (fs.FileInfo, error) { return e, nil }
