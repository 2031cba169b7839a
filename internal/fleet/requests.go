package fleet

import "github.com/corral-dev/corral/internal/api"

// The daemon's fleet routes (/v1/fleet/...): their requests and answers,
// shared by the daemon and the CLI.

// InitRequest is POST /v1/fleet/init.
type InitRequest struct {
	Name        string `json:"name"`
	Listen      string `json:"listen"`
	TLS         bool   `json:"tls"`
	MaxJobs     int    `json:"max_jobs"`
	NotifyFleet bool   `json:"notify_fleet"`
	// ForgetAfterMS: a host unreachable this long leaves the fleet's
	// views (0: never).
	ForgetAfterMS int64 `json:"forget_after_ms"`
	// ClusterListen makes this hub the first of a cluster of hubs: its
	// HOST:PORT for routes (corral fleet join-hub adds the others).
	ClusterListen string `json:"cluster_listen,omitempty"`
}

// JoinInfo says how another machine joins.
type JoinInfo struct {
	Name        string `json:"name"`
	URL         string `json:"url"`
	Token       string `json:"token"`
	Fingerprint string `json:"ca_fingerprint,omitempty"`
	Join        string `json:"join"` // the command to run there
	// JoinHub (a cluster's hub) is the command another machine runs to
	// become one more hub of the cluster.
	JoinHub string `json:"join_hub,omitempty"`
}

// JoinHubRequest is POST /v1/fleet/join-hub: this daemon becomes one
// more hub of a cluster.
type JoinHubRequest struct {
	URLs          []string `json:"urls"`
	HubToken      string   `json:"hub_token"`
	CAFingerprint string   `json:"ca_fingerprint"`
	Name          string   `json:"name"`
	Listen        string   `json:"listen"`
	ClusterListen string   `json:"cluster_listen"`
	MaxJobs       int      `json:"max_jobs"`
	NotifyFleet   bool     `json:"notify_fleet"`
}

// JoinRequest is POST /v1/fleet/join.
type JoinRequest struct {
	URLs          []string `json:"urls"`
	Token         string   `json:"token"`
	Creds         string   `json:"creds"`
	Name          string   `json:"name"`
	CAFingerprint string   `json:"ca_fingerprint"`
	MaxJobs       int      `json:"max_jobs"`
	NotifyFleet   bool     `json:"notify_fleet"`
}

// InviteRequest is POST /v1/fleet/invite.
type InviteRequest struct {
	Name        string `json:"name"`
	ObserveOnly bool   `json:"observe_only"`
	// TakeJobs lets an observe-only host take jobs (one with control
	// always may).
	TakeJobs  bool  `json:"take_jobs,omitempty"`
	ExpiresMS int64 `json:"expires_ms"`
	Revoke    bool  `json:"revoke"`
}

// ForgetRequest is POST /v1/fleet/forget.
type ForgetRequest struct {
	Host string `json:"host"`
}

// SetRequest is POST /v1/fleet/set: settings to change (a field left
// out stays as it is). ForgetAfterMS is the hub's; MaxJobs this host's.
type SetRequest struct {
	ForgetAfterMS *int64 `json:"forget_after_ms,omitempty"`
	MaxJobs       *int   `json:"max_jobs,omitempty"`
}

// Status is GET /v1/fleet/status.
type Status struct {
	Name    string       `json:"name"`
	Hub     bool         `json:"hub"`
	URL     string       `json:"url,omitempty"`
	Joined  bool         `json:"joined"`
	Hosts   []HostStatus `json:"hosts"`
	Member  *Stats       `json:"member,omitempty"`
	Refused int64        `json:"connections_refused"`
	Why     string       `json:"last_refusal,omitempty"`
	// Replicas (a cluster's hub): the fewest copies the cluster keeps of
	// any of the fleet's buckets and streams.
	Replicas int `json:"replicas,omitempty"`
}

// ExecRequest is POST /v1/fleet/jobs.
type ExecRequest struct {
	Exec  api.ExecRequest `json:"exec"`
	Host  string          `json:"host"`
	Retry int             `json:"retry"`
	// Hosts (globs) or AllHosts run one job on each matching reachable
	// host that takes jobs.
	Hosts    []string `json:"hosts,omitempty"`
	AllHosts bool     `json:"all_hosts,omitempty"`
}

// JoinResult is POST /v1/fleet/join's answer.
type JoinResult struct {
	Name string   `json:"name"`
	URLs []string `json:"urls"`
}

// LeaveResult is POST /v1/fleet/leave's answer: the host's name in the
// fleet it left, and whether it was the fleet's hub.
type LeaveResult struct {
	Left   string `json:"left"`
	WasHub bool   `json:"was_hub"`
}

// RevokeResult is POST /v1/fleet/invite's answer to a revocation.
type RevokeResult struct {
	Revoked string `json:"revoked"`
}

// ForgetResult is POST /v1/fleet/forget's answer.
type ForgetResult struct {
	Forgotten string `json:"forgotten"`
}

// SetResult is POST /v1/fleet/set's answer: the settings changed, and a
// note when a setting cannot take effect yet.
type SetResult struct {
	ForgetAfterMS *int64 `json:"forget_after_ms,omitempty"`
	MaxJobs       *int   `json:"max_jobs,omitempty"`
	Note          string `json:"note,omitempty"`
}

// ExecStarted is POST /v1/fleet/jobs's answer: the fleet job's id, and
// the hosts that run one each (none: one host, chosen by the fleet).
type ExecStarted struct {
	Hosts []string `json:"hosts"`
	ID    string   `json:"id"`
}

// CancelResult is POST /v1/fleet/jobs/{id}/kill's answer.
type CancelResult struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}
