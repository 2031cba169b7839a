// Package buildinfo says which build of corral is running: the version
// and commit it was built from, and a fingerprint of the binary itself,
// so a client can tell when the daemon runs another build.
//
// A release build stamps the version, commit and date with the linker:
//
//	go build -ldflags "-X github.com/corral-dev/corral/internal/buildinfo.version=v1.2.3
//	  -X github.com/corral-dev/corral/internal/buildinfo.commit=$(git rev-parse HEAD)
//	  -X github.com/corral-dev/corral/internal/buildinfo.date=2026-12-02T19:00:00Z"
//
// Without them (go install, go build) the module's build information
// says what it can.
package buildinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"runtime/debug"
	"sync"
)

// Info describes a build.
type Info struct {
	Version  string `json:"version"`            // the module version, "(devel)" for a local build
	Commit   string `json:"commit,omitempty"`   // the VCS revision, when the build recorded it
	Time     string `json:"time,omitempty"`     // the commit's time
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go       string `json:"go"`
	// Binary is 12 hex digits of a SHA-256 of the running executable: of
	// the content hash its Go build ID ends with, or of its whole bytes
	// when it has none. Two builds differ here even when nothing else
	// says so.
	Binary string `json:"binary"`
}

// Set by the linker (-ldflags -X) in a release build; each one set wins
// over what the module's build information says.
var (
	version string
	commit  string
	date    string
)

var (
	once sync.Once
	self Info
)

// Self returns this process's build.
func Self() Info {
	once.Do(func() {
		bi, _ := debug.ReadBuildInfo()
		self = resolve(bi, version, commit, date)
		self.Binary = fingerprint()
	})
	return self
}

// resolve is the build's Info from the module's build information (nil:
// none) and the stamped version, commit and date.
func resolve(bi *debug.BuildInfo, version, commit, date string) Info {
	i := Info{Version: "(devel)"}
	if bi != nil {
		if bi.Main.Version != "" {
			i.Version = bi.Main.Version
		}
		i.Go = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.time":
				i.Time = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	// "none" is what a release tool stamps when it could not ask git.
	if version != "" {
		i.Version = version
	}
	if commit != "" && commit != "none" && commit != i.Commit {
		// The stamp names the commit; what the tree held is not known.
		i.Commit, i.Modified = commit, false
	}
	if date != "" && date != "none" {
		i.Time = date
	}
	return i
}

func fingerprint() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return fingerprintFile(exe)
}

func fingerprintFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if id := contentID(f); id != "" {
		// The linker's hash of the binary's bytes, hashed again to keep
		// the fingerprint's form.
		h.Write([]byte("go build content " + id))
	} else if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// String is one line: "corral (devel) commit 1a2b3c4d5e6f (modified), go1.26.8, binary 0123456789ab".
func (i Info) String() string {
	s := "corral " + i.Version
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += " commit " + c
		if i.Modified {
			s += " (modified)"
		}
	}
	if i.Go != "" {
		s += ", " + i.Go
	}
	if i.Binary != "" {
		s += ", binary " + i.Binary
	}
	return s
}

// Same reports whether two builds are the same binary.
func (i Info) Same(o Info) bool {
	if i.Binary != "" && o.Binary != "" {
		return i.Binary == o.Binary
	}
	return i.Version == o.Version && i.Commit == o.Commit && i.Modified == o.Modified
}
