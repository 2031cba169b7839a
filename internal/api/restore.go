package api

// RestoreRequest starts again, or forgets, the lost panes: POST
// /v1/restore.
type RestoreRequest struct {
	// Forget drops the lost panes instead of starting them.
	Forget bool `json:"forget"`
	// IDs are the lost panes to restore or forget, by id or name (none:
	// every lost pane).
	IDs []string `json:"ids,omitempty"`
}

// Restored is what corral restore did with one lost pane; POST
// /v1/restore answers one per pane.
type Restored struct {
	ID      string   `json:"id"` // the pane's id now (its old one when free)
	Was     string   `json:"was"`
	Name    string   `json:"name,omitempty"`
	Cwd     string   `json:"cwd"`
	Command []string `json:"command"`
	// Resumed names the conversation the agent resumes ("" when the pane
	// started fresh); Note says why it did not, or what failed.
	Resumed string `json:"resumed,omitempty"`
	Note    string `json:"note,omitempty"`
	Error   string `json:"error,omitempty"`
}

// HandoverRequest asks the daemon to let go of its panes for the next
// one and stop: POST /v1/handover. To, a socket of the next daemon's in
// the state folder, has the lock and the listening socket passed on to it.
type HandoverRequest struct {
	To string `json:"to"`
}

// HandoverResult says the daemon is handing over, and whether it passes
// its lock and socket on.
type HandoverResult struct {
	Status string `json:"status"`
	Passes bool   `json:"passes"`
}
