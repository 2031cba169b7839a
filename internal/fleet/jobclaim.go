package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A job's claim records fence its start: who runs an attempt, and whether
// it may still start. They are one subject per job in the caller's output
// stream, each written only if the subject's last record is the one its
// writer read (a compare-and-set on the stream's sequence per subject):
//
//   - "queue": the caller, before it queues the job's first attempt,
//     fenced by it. Without it a copy of the first attempt, fenced by
//     nothing, could claim it once the records after it are gone.
//   - "claim": a host takes an attempt off the queue, after the record the
//     caller named when it queued the attempt (JobRequest.Fence). It is
//     written before the queue message is acknowledged, so a host gone
//     between the two leaves either no claim (the message goes to another
//     host after jobAckWait) or a claim the caller sees, followed by silence.
//   - "start": the host that claimed it is about to start it, after its
//     claim.
//   - "withdraw": the caller gives the attempt up, after the last record it
//     saw. Once written, the claim or start of that attempt that comes late
//     (a slow host, a redelivered message) is refused: the attempt never
//     starts. When the caller withdraws after a claim and before a start,
//     the job did not run, and it queues it again, fenced by the withdrawal.
type claimRecord struct {
	Type    string `json:"type"` // queue, claim, start, withdraw
	Host    string `json:"host,omitempty"`
	Attempt int    `json:"attempt"`
}

const (
	claimQueue    = "queue"
	claimClaim    = "claim"
	claimStart    = "start"
	claimWithdraw = "withdraw"
)

// jobAckWait is how long a job message taken off the queue stays with its
// host before the queue gives it to another, unless acknowledged: a host
// gone before it claimed the job leaves it that long. The claim, not the
// acknowledgement, decides who runs an attempt, so a slow host only has its
// message meet its own claim elsewhere.
const jobAckWait = 10 * time.Second

// claimTries bounds the tries of a claim record's write (3 s each).
const claimTries = 5

// errFenced is a claim record refused because another came first.
var errFenced = errors.New("another claim record came first")

func claimSubject(caller, job string) string {
	return subjJobOut + caller + "." + claimToken + "." + job
}

// writeClaim writes rec on subject if the subject's last record is at
// sequence after (0: none), in at most tries tries, and returns the new
// record's sequence; refused, errFenced and the subject's last sequence as
// the server said it (after when it did not). A try that timed out may
// still have been written: the next try then meets it and reports
// errFenced, which its writer takes as a refusal (a caller then sees its
// own record and goes on as if answered; a host says not_started).
func (m *Member) writeClaim(subject string, rec claimRecord, after uint64, tries int) (uint64, error) {
	b, _ := json.Marshal(rec)
	var err error
	for try := 0; try < tries && m.ctx.Err() == nil; try++ {
		if try > 0 {
			select {
			case <-m.ctx.Done():
				return 0, m.ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
		if m.o.claimWriteLost != nil && m.o.claimWriteLost(rec) {
			err = context.DeadlineExceeded
			continue
		}
		ctx, cancel := context.WithTimeout(m.ctx, 3*time.Second)
		var ack *jetstream.PubAck
		ack, err = m.js.Publish(ctx, subject, b, jetstream.WithExpectLastSequencePerSubject(after))
		cancel()
		if err == nil && m.o.claimAnswerLost != nil && m.o.claimAnswerLost(rec) {
			err = context.DeadlineExceeded
			continue
		}
		if err == nil {
			return ack.Sequence, nil
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			last := after
			var n uint64
			if _, err := fmt.Sscanf(apiErr.Description, "wrong last sequence: %d", &n); err == nil {
				last = n
			}
			return last, errFenced
		}
	}
	if err == nil {
		err = m.ctx.Err()
	}
	return 0, fmt.Errorf("write the job's %s record: %w", rec.Type, err)
}

// takeStage is where a host is in taking a job, for a test's hook.
type takeStage int

const (
	takeFetched  takeStage = iota // off the queue, not claimed
	takeClaimed                   // claimed, not acknowledged nor started
	takeStarting                  // its start recorded, about to start here
)
