package headless

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecideRequest is Decide for a request whose fields are known: corral
// exec's decision, what no rule allows denied.
func (p *Policy) DecideRequest(req Request) (allow bool, why string) {
	if req.Fields == nil && cutInput(req.Input) {
		return false, p.Source + ": the input was cut at " + fmt.Sprint(clipLine) + " bytes, so no rule can see it whole: deny"
	}
	v := p.Explain(req)
	switch v.Decision {
	case Allow, Deny:
		r := p.rules[v.Rule-1]
		return v.Decision == Allow, fmt.Sprintf("%s rule %d (tool %q, input %q): %s", p.Source, r.n, r.toolSrc, r.inputSrc, v.Decision)
	}
	if v.Refused != "" && !v.NoMatch {
		return false, p.Source + ": " + v.Refused + ": deny"
	}
	return false, p.Source + ": no rule matched: deny"
}

// PermissionRequest is a permission event as a policy reads it: with a
// relayed can_use_tool request's whole input (every field, never
// clipped); an ACP request carries only its tool and input.
func PermissionRequest(ev Event) Request {
	req := Request{Tool: ev.Tool, Input: ev.Input}
	raw := bytes.TrimSpace(ev.rawInput)
	var in map[string]json.RawMessage
	if !bytes.HasPrefix(raw, []byte("{")) || json.Unmarshal(raw, &in) != nil || in == nil {
		return req // ACP's rawInput is its options, not the tool's input
	}
	req.Fields = make(map[string]string, len(in))
	for key, val := range in {
		val = bytes.TrimSpace(val)
		var s string
		if !bytes.HasPrefix(val, []byte(`"`)) || json.Unmarshal(val, &s) != nil {
			var buf bytes.Buffer
			if json.Compact(&buf, val) != nil {
				return Request{Tool: ev.Tool, Input: ev.Input}
			}
			s = buf.String()
		}
		req.Fields[key] = s
	}
	// The main input as agents.ParsePermission reads a hook's.
	for _, key := range []string{"command", "file_path", "path", "url", "pattern"} {
		var s string
		if json.Unmarshal(in[key], &s) == nil && s != "" {
			req.Input, req.InputKey = s, key
			return req
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		req.Input = buf.String()
	}
	return req
}
