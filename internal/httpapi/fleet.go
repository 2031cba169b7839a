package httpapi

import (
	"context"
	"net/http"

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
}

// fleetRoutes are the routes of Fleet.
func fleetRoutes(svc Service) []Route {
	return []Route{
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
	}
}
