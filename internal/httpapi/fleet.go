package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/fleet"
)

// Fleet is what the routes that put the daemon in a fleet, or take it
// out, need of it.
type Fleet interface {
	FleetInit(req fleet.InitRequest) (fleet.JoinInfo, error)
	// FleetJoinHub fetches the hubs' bundle within ctx.
	FleetJoinHub(ctx context.Context, req fleet.JoinHubRequest) (fleet.JoinInfo, error)
	FleetJoin(req fleet.JoinRequest) (fleet.JoinResult, error)
	FleetLeave() (fleet.LeaveResult, error)
	// FleetInvite answers a fleet.JoinInfo, or a fleet.RevokeResult for a
	// revoke.
	FleetInvite(req fleet.InviteRequest) (any, error)
	FleetForget(req fleet.ForgetRequest) (fleet.ForgetResult, error)
	FleetSet(req fleet.SetRequest) (fleet.SetResult, error)
	FleetStatus() (fleet.Status, error)
	// FleetPanes is every host's panes the filter keeps.
	FleetPanes(f fleet.PaneFilter) ([]fleet.PaneRecord, error)
	// Jobs lists this daemon's running jobs; FleetJobs the fleet's:
	// queued, and running on each host.
	Jobs() []fleet.JobRow
	FleetJobs(ctx context.Context) ([]fleet.JobRow, error)
	// FleetExec queues a job on the fleet; FleetJobFeed follows the lines
	// of one this daemon queued, FleetJobKill cancels it.
	FleetExec(req fleet.ExecRequest) (fleet.ExecStarted, error)
	FleetJobFeed(id string) (LineFeed, error)
	FleetJobKill(id string) (fleet.CancelResult, error)
}

// LineFeed is a stream of NDJSON lines as they come.
type LineFeed interface {
	// Since returns the lines from number next on, the number after them,
	// a channel closed when more come, and whether the stream ended.
	Since(next int) (lines [][]byte, after int, more <-chan struct{}, ended bool)
}

// fleetRoutes are the routes of Fleet.
func fleetRoutes(svc Service) []route {
	return []route{
		{"POST /v1/fleet/init", decodeCall(svc.FleetInit)},
		{"POST /v1/fleet/join", decodeCall(svc.FleetJoin)},
		{"POST /v1/fleet/join-hub", func(w http.ResponseWriter, r *http.Request) {
			decodeCall(func(req fleet.JoinHubRequest) (fleet.JoinInfo, error) { return svc.FleetJoinHub(r.Context(), req) })(w, r)
		}},
		{"POST /v1/fleet/leave", func(w http.ResponseWriter, r *http.Request) {
			res, err := svc.FleetLeave()
			answer(w, res, err)
		}},
		{"POST /v1/fleet/invite", decodeCall(svc.FleetInvite)},
		{"POST /v1/fleet/forget", decodeCall(svc.FleetForget)},
		{"POST /v1/fleet/set", decodeCall(svc.FleetSet)},
		{"GET /v1/fleet/status", func(w http.ResponseWriter, r *http.Request) {
			st, err := svc.FleetStatus()
			answer(w, st, err)
		}},
		// ?host=H (repeatable, a glob) and ?state=S (repeatable, or
		// comma-separated) keep some.
		{"GET /v1/fleet/panes", func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			var f fleet.PaneFilter
			for _, h := range q["host"] {
				f.Hosts = append(f.Hosts, strings.Split(h, ",")...)
			}
			for _, st := range q["state"] {
				f.States = append(f.States, strings.Split(st, ",")...)
			}
			panes, err := svc.FleetPanes(f)
			answer(w, panes, err)
		}},
		{"POST /v1/fleet/jobs", decodeCall(svc.FleetExec)},
		{"GET /v1/fleet/jobs/{id}/stream", func(w http.ResponseWriter, r *http.Request) {
			feed, err := svc.FleetJobFeed(r.PathValue("id"))
			if err != nil {
				WriteError(w, err)
				return
			}
			streamLines(w, r, feed)
		}},
		{"POST /v1/fleet/jobs/{id}/kill", func(w http.ResponseWriter, r *http.Request) {
			res, err := svc.FleetJobKill(r.PathValue("id"))
			answer(w, res, err)
		}},
		{"GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) { Reply(w, svc.Jobs()) }},
		{"GET /v1/fleet/jobs", func(w http.ResponseWriter, r *http.Request) {
			rows, err := svc.FleetJobs(r.Context())
			answer(w, rows, err)
		}},
	}
}

// streamLines writes a feed's lines as they come, each write with a
// deadline, until it ends or the client goes.
func streamLines(w http.ResponseWriter, r *http.Request, feed LineFeed) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	next := 0
	for {
		lines, after, more, ended := feed.Since(next)
		next = after
		for _, l := range lines {
			_ = rc.SetWriteDeadline(time.Now().Add(StreamWriteWait))
			// Two writes, not an append: the line is the feed's, shared by
			// every stream of it.
			if _, err := w.Write(l); err != nil {
				return
			}
			if _, err := w.Write([]byte{'\n'}); err != nil {
				return
			}
		}
		_ = rc.Flush()
		if ended {
			return
		}
		select {
		case <-more:
		case <-r.Context().Done():
			return
		}
	}
}
