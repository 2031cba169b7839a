package api

// Approval is a policy's decision on one permission request.
type Approval struct {
	// Decision is "allow", "deny", or "person" (no rule matched, or the
	// request was not read whole: left to the person).
	Decision string `json:"decision"`
	Policy   string `json:"policy"`
	Rule     int    `json:"rule"` // 0 when no rule decided
	Tool     string `json:"tool"`
	Input    string `json:"input"`
	// Text says it in words: "allowed by rule 2: Bash: ls -la /tmp".
	Text string `json:"text"`
	Time string `json:"time"` // RFC 3339 with milliseconds
}

// HookResult is the daemon's answer to POST /v1/hook. Decision is set
// when a policy decided a permission request: `corral hook` prints it for
// the agent.
type HookResult struct {
	Pane     string        `json:"pane"`
	Event    string        `json:"event"`
	Ignored  string        `json:"ignored"`
	Decision *HookDecision `json:"decision,omitempty"`
}

// HookDecision is the decision for the agent, in its own words
// (Claude Code's and Codex's PermissionRequest hook output).
type HookDecision struct {
	Behavior string `json:"behavior"` // allow or deny
	Message  string `json:"message,omitempty"`
}

// Worktree is a pane's git worktree and how it stands against the branch
// it came from.
type Worktree struct {
	Path   string `json:"path"`
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Base   string `json:"base"` // the branch or commit it was made from
	Ahead  int    `json:"ahead"`
	Behind int    `json:"behind"`
	Dirty  bool   `json:"dirty"`
	// Error says why its state could not be read ("" when it was).
	Error string `json:"error,omitempty"`
}
