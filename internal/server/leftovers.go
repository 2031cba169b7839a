package server

import (
	"os"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/procs"
)

// leftGrace is how long what panes and jobs left running gets between
// SIGTERM and SIGKILL.
const leftGrace = time.Second

// endLeft ends what this daemon's panes and jobs left running with no
// holder or daemon of theirs: processes that carry this daemon's socket in
// their environment and the id of a job, or of a pane not in keep (a
// daemon killed with its holders; a shell that ignores SIGHUP, a setsid
// grandchild). It runs before requests are served and after every pane and job
// has ended at shutdown, so no pane or job of this daemon's own is running
// unseen. When the pane table could not be read, panes are left alone:
// which ones are this daemon's is not known.
func (s *Server) endLeft(keep map[string]bool, when string) {
	owner := "CORRAL_SOCKET=" + s.opts.Socket
	find := func() []procs.Left {
		var out []procs.Left
		for _, l := range procs.FindLeft(owner, "CORRAL_PANE", "CORRAL_JOB") {
			if l.Key == "CORRAL_PANE" && (keep[l.ID] || s.set.TableUnread()) || panestore.HolderAlive(l.PID) ||
				l.Key == "CORRAL_JOB" && s.jobHeldRunning(l.ID) {
				continue
			}
			out = append(out, l)
		}
		return out
	}
	for _, l := range procs.EndLeft(find, leftGrace) {
		what := "pane"
		if l.Key == "CORRAL_JOB" {
			what = "job"
		}
		s.opts.Logf("%s %s: ended process %d (%s), which it left running %s", what, l.ID, l.PID, l.Command, when)
	}
}

// scrubEnv drops the pane and job marks the daemon may have inherited (a
// daemon started from a corral pane): the processes it starts would carry
// them, and be taken for what that pane left.
func scrubEnv() {
	for _, kv := range os.Environ() {
		for _, k := range []string{"CORRAL_PANE=", "CORRAL_JOB=", "CORRAL_TOKEN="} {
			if strings.HasPrefix(kv, k) {
				_ = os.Unsetenv(strings.TrimSuffix(k, "="))
			}
		}
	}
}
