package headless

import (
	"encoding/json"
	"slices"
)

// ClaudeRelay prepares a `claude -p` command line for the permission relay:
// the prompt moves from the command line to stdin (as a stream-json user
// message) and the control protocol is switched on, so each permission
// request reaches corral instead of being denied. prompt overrides the
// one found after -p/--print. ok is false when there is no prompt.
func ClaudeRelay(argv []string, prompt string) (out []string, text string, ok bool) {
	out = append([]string(nil), argv...)
	for i := 1; i < len(out)-1; i++ {
		if (out[i] == "-p" || out[i] == "--print") && out[i+1] != "" && out[i+1][0] != '-' {
			if prompt == "" {
				prompt = out[i+1]
			}
			out = slices.Delete(out, i+1, i+2)
			break
		}
	}
	if prompt == "" {
		return argv, "", false
	}
	if !slices.Contains(out, "--input-format") {
		out = append(out, "--input-format", "stream-json")
	}
	if !slices.Contains(out, "--permission-prompt-tool") {
		out = append(out, "--permission-prompt-tool", "stdio")
	}
	return out, prompt, true
}

// QwenRelay prepares a `qwen -p` command line for the permission relay:
// Qwen Code speaks Claude Code's control protocol once a client has sent
// it an initialize request (see RelayOpening) — the prompt moves to stdin
// and each can_use_tool request reaches corral. It takes no
// --permission-prompt-tool. ok is false when there is no prompt.
func QwenRelay(argv []string, prompt string) (out []string, text string, ok bool) {
	out = append([]string(nil), argv...)
	for i := 1; i < len(out)-1; i++ {
		if (out[i] == "-p" || out[i] == "--prompt") && out[i+1] != "" && out[i+1][0] != '-' {
			if prompt == "" {
				prompt = out[i+1]
			}
			out = slices.Delete(out, i, i+2)
			break
		}
	}
	if prompt == "" {
		return argv, "", false
	}
	if !slices.Contains(out, "--input-format") {
		out = append(out, "--input-format", "stream-json")
	}
	if !slices.Contains(out, "--output-format") && !slices.Contains(out, "-o") {
		out = append(out, "--output-format", "stream-json")
	}
	if !slices.Contains(out, "--channel") {
		out = append(out, "--channel", "SDK")
	}
	return out, prompt, true
}

// RelayOpening is what a relayed run's stdin starts with: the prompt as a
// stream-json user message, after an initialize request for an agent
// that waits for one (Qwen Code).
func RelayOpening(agent, prompt string) []byte {
	if agent != "qwen" {
		return userMessage(prompt)
	}
	init, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": "corral-init",
		"request": map[string]any{"subtype": "initialize", "hooks": nil}})
	return append(append(init, '\n'), userMessage(prompt)...)
}

// userMessage is the stream-json line that carries the prompt.
func userMessage(prompt string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
	return append(b, '\n')
}

// controlResponse answers a can_use_tool request.
func controlResponse(req Event, allow bool, reason string) []byte {
	var decision map[string]any
	if allow {
		input := req.rawInput
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		decision = map[string]any{"behavior": "allow", "updatedInput": input}
	} else {
		decision = map[string]any{"behavior": "deny", "message": "denied by corral: " + reason}
	}
	b, _ := json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": req.RequestID, "response": decision}})
	return append(b, '\n')
}

// controlError answers a control request corral does not serve.
func controlError(id, subtype string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "error", "request_id": id, "error": "corral does not serve " + subtype}})
	return append(b, '\n')
}
