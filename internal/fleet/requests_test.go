package fleet

import (
	"encoding/json"
	"testing"
)

// The fleet routes' answers keep the wire shape their clients read (older
// CLIs decoded them as maps): the keys, their order and what is left out.
func TestRouteAnswersShape(t *testing.T) {
	three, zero, week := 3, 0, int64(604800000)
	for _, tc := range []struct {
		name   string
		answer any
		want   string
	}{
		{"join", JoinResult{Name: "web-1", URLs: []string{"tls://hub:4222"}}, `{"name":"web-1","urls":["tls://hub:4222"]}`},
		{"join without urls", JoinResult{Name: "web-1"}, `{"name":"web-1","urls":null}`},
		{"leave", LeaveResult{Left: "web-1", WasHub: true}, `{"left":"web-1","was_hub":true}`},
		{"revoke", RevokeResult{Revoked: "laptop"}, `{"revoked":"laptop"}`},
		{"forget", ForgetResult{Forgotten: "old"}, `{"forgotten":"old"}`},
		{"set, as asked", SetResult{ForgetAfterMS: &week, MaxJobs: &zero}, `{"forget_after_ms":604800000,"max_jobs":0}`},
		{"set, nothing", SetResult{}, `{}`},
		{"set, with a note", SetResult{MaxJobs: &three, Note: "observe-only"}, `{"max_jobs":3,"note":"observe-only"}`},
		{"a job on each host", ExecStarted{ID: "fjx", Hosts: []string{"a", "b"}}, `{"hosts":["a","b"],"id":"fjx"}`},
		{"a job on one host", ExecStarted{ID: "fjx"}, `{"hosts":null,"id":"fjx"}`},
		{"cancel", CancelResult{ID: "fjx", Status: "cancelling"}, `{"id":"fjx","status":"cancelling"}`},
	} {
		b, err := json.Marshal(tc.answer)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: %s %v, want %s", tc.name, b, err, tc.want)
		}
	}
	// A set's answer, as asked, is the request as it came.
	req := SetRequest{ForgetAfterMS: &week, MaxJobs: &three}
	a, _ := json.Marshal(req)
	b, _ := json.Marshal(SetResult{ForgetAfterMS: req.ForgetAfterMS, MaxJobs: req.MaxJobs})
	if string(a) != string(b) {
		t.Errorf("set: %s, want the request %s", b, a)
	}
}
