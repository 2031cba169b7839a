// Package tomlfile decodes a strict TOML file — unknown keys are errors —
// and says where a problem is: "what file:line:column: problem".
package tomlfile

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Problem is one thing wrong in a TOML file, located where it can be.
type Problem struct {
	Line, Column int      // 0 when unknown
	Key          []string // an unknown key's path; nil for other problems
	Msg          string   // what is wrong, without the location
	Snippet      string   // the source around the problem, when known
}

// Strict decodes data into v and returns every problem found: each
// unknown key, or the one syntax or type error. None: nil.
func Strict(data []byte, v any) []Problem {
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var de *toml.DecodeError
	var se *toml.StrictMissingError
	switch {
	case errors.As(err, &se) && len(se.Errors) > 0:
		var ps []Problem
		for i := range se.Errors {
			e := &se.Errors[i]
			line, col := e.Position()
			ps = append(ps, Problem{Line: line, Column: col, Key: e.Key(),
				Msg: fmt.Sprintf("unknown key %q", strings.Join(e.Key(), ".")), Snippet: e.String()})
		}
		return ps
	case errors.As(err, &de):
		line, col := de.Position()
		return []Problem{{Line: line, Column: col, Msg: strings.TrimPrefix(de.Error(), "toml: "), Snippet: de.String()}}
	}
	return []Problem{{Msg: err.Error()}}
}

// Decode decodes data into v. what names the kind of file ("config",
// "policy") and hint, if set, follows an unknown key's error. The first
// problem is returned.
func Decode(what, source string, data []byte, v any, hint string) error {
	ps := Strict(data, v)
	if len(ps) == 0 {
		return nil
	}
	p := ps[0]
	switch {
	case p.Key != nil:
		msg := fmt.Sprintf("%s %s:%d:%d: unknown key %v", what, source, p.Line, p.Column, p.Key)
		if hint != "" {
			msg += " (" + hint + ")"
		}
		return errors.New(msg)
	case p.Line > 0:
		return fmt.Errorf("%s %s:%d:%d: toml: %s", what, source, p.Line, p.Column, p.Msg)
	}
	return fmt.Errorf("%s %s: %s", what, source, p.Msg)
}
