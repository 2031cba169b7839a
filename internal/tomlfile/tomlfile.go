// Package tomlfile decodes a strict TOML file — unknown keys are errors —
// and says where a problem is: "what file:line:column: problem".
package tomlfile

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/pelletier/go-toml/v2"
)

// Decode decodes data into v. what names the kind of file ("config",
// "policy") and hint, if set, follows an unknown key's error.
func Decode(what, source string, data []byte, v any, hint string) error {
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
		line, col := se.Errors[0].Position()
		msg := fmt.Sprintf("%s %s:%d:%d: unknown key %v", what, source, line, col, se.Errors[0].Key())
		if hint != "" {
			msg += " (" + hint + ")"
		}
		return errors.New(msg)
	case errors.As(err, &de):
		line, col := de.Position()
		return fmt.Errorf("%s %s:%d:%d: %v", what, source, line, col, de)
	}
	return fmt.Errorf("%s %s: %w", what, source, err)
}
