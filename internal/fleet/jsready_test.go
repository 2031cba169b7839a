package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// answersAfter is a JetStream whose account info answers errs in turn,
// then an answer.
type answersAfter struct {
	jetstream.JetStream
	errs  []error
	asked int
}

func (a *answersAfter) AccountInfo(context.Context) (*jetstream.AccountInfo, error) {
	a.asked++
	if len(a.errs) > 0 {
		err := a.errs[0]
		a.errs = a.errs[1:]
		return nil, err
	}
	return &jetstream.AccountInfo{}, nil
}

// A new cluster's servers answer "JetStream system temporarily
// unavailable" while they elect their meta leader: a join waits through
// it, as through no answer; any other error ends the wait at once.
func TestJetStreamReadyWaitsOutAnElection(t *testing.T) {
	t.Parallel()
	unavailable := &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
	refused := &jetstream.APIError{Code: 403, ErrorCode: 10003, Description: "bad request"}
	for _, tc := range []struct {
		name   string
		errs   []error
		wantOK bool
		asked  int
	}{
		{"unavailable, then an answer", []error{unavailable, unavailable}, true, 3},
		{"no answer, then an answer", []error{context.DeadlineExceeded}, true, 2},
		{"not enabled yet, then an answer", []error{jetstream.ErrJetStreamNotEnabled}, true, 2},
		{"another error", []error{refused}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := &answersAfter{errs: tc.errs}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := jetStreamReady(ctx, js)
			if (err == nil) != tc.wantOK || js.asked != tc.asked {
				t.Fatalf("jetStreamReady: %v after %d tries; want ok %v after %d", err, js.asked, tc.wantOK, tc.asked)
			}
			if !tc.wantOK && !errors.Is(err, refused) {
				t.Fatalf("the error %v does not carry the server's", err)
			}
		})
	}
}
