package pane

import (
	"bytes"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/proctest"
)

// A held pane that wrote far more than its ring holds keeps in the ring
// a checkpoint and the output since, not the whole ring; the next daemon
// replays it to the same screen, colours and history, and the pane is live.
func TestHeldCheckpointAdopt(t *testing.T) {
	t.Parallel()
	const lines = `i=0; while [ $i -lt 15000 ]; do printf '\033[3%dmline %d\033[0m %s\n' $((i%8)) $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done; `
	for _, c := range []struct{ name, script string }{
		{"lines", lines + `echo END; read x; echo got-$x; read y; echo got-$y; read z`},
		{"then a full screen", lines + `printf '\033[?1049h\033[5;5H\033[44mEND\033[0m'; read x; printf '\033[?1049lgot-%s\n' $x; read y; echo got-$y; read z`},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := holding(t, "ck")
			cfg := Config{ID: "ck", Argv: []string{"sh", "-c", c.script}, Cols: 80, Rows: 24, Rules: ruleSet(t),
				Sweep: 100 * time.Millisecond, Holder: h}
			p, err := Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cleanup(t, p)
			awaitScreen(t, p, "END")
			// The last checkpoint may wait for the sweep.
			if !proctest.WaitFor(10*time.Second, func() bool { return p.ring.SinceCheckpoint() < CheckpointEvery }) {
				t.Fatalf("no checkpoint after the output: %d bytes since the last", p.ring.SinceCheckpoint())
			}
			replay := len(p.ring.Bytes())
			t.Logf("the ring replays %d bytes of its %d", replay, holder.DefaultRing)
			if replay > holder.DefaultRing/2 {
				t.Errorf("the ring replays %d bytes: no checkpoint cut it", replay)
			}
			// One more, now: the screen the next daemon sees is then the
			// checkpoint's, not output that followed it, and more output
			// follows it.
			p.mu.Lock()
			p.checkpointLocked(1, 0)
			p.unlock()
			if n := p.ring.SinceCheckpoint(); n != 0 || !bytes.Equal(p.ring.Bytes(), must(p.term.Checkpoint())) {
				t.Fatalf("the ring does not end in a checkpoint: %d bytes since", n)
			}
			if err := p.Input([]byte("x\r"), false); err != nil {
				t.Fatal(err)
			}
			awaitScreen(t, p, "got-x")
			screen, styled, history := p.Snapshot(), p.term.StyledRows(), p.term.Scrollback(0)
			if len(history) < 400 {
				t.Fatalf("only %d rows of history", len(history))
			}
			if !p.Detach() {
				t.Fatal("not detached")
			}
			hc, err := holder.Dial(h.Socket, h.Secret, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			q, err := Adopt(cfg, hc, Adopted{Last: p.Info().Decision})
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Snapshot(); !reflect.DeepEqual(got, screen) {
				t.Errorf("screen before:\n%s\nafter adoption:\n%s", screen.Text(), got.Text())
			}
			if got := q.term.StyledRows(); !reflect.DeepEqual(got, styled) {
				t.Errorf("colours differ after adoption:\n%v\n%v", styled, got)
			}
			if got := q.term.Scrollback(0); !reflect.DeepEqual(got, history) {
				t.Errorf("history: %d rows after adoption, %d before; last %q, want %q", len(got), len(history), got[len(got)-1], history[len(history)-1])
			}
			if err := q.Input([]byte("hi\r"), false); err != nil {
				t.Fatal(err)
			}
			awaitScreen(t, q, "got-hi")
			q.Kill(syscall.SIGKILL)
			<-q.Done()
		})
	}
}

func must(b []byte, ok bool) []byte {
	if !ok {
		return nil
	}
	return b
}
