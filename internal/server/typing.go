package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/pane"
)

// EnterDelay separates typed text, once the program has read it, from the
// Enter that submits it; EnterReadWait bounds the wait for that read (a
// busy program reads late, and text and Enter read together are a paste);
// EnterSettleWait bounds the wait for the screen to settle after it (a
// program that keeps drawing, a spinner, is not waited for longer).
const (
	EnterDelay      = 50 * time.Millisecond
	EnterReadWait   = 2 * time.Second
	EnterSettleWait = 1500 * time.Millisecond
)

// typeText types text (refused while blocked when guard is set), then,
// with enter, Enter on its own a moment later: TUIs (Ink, ratatui) read a
// burst of input as a paste, and a paste's Enter does not submit. Before
// the Enter the screen must settle (the pane's answer_settle, at least
// pane.EnterSettle) and the guard looks again: a program that drew a
// dialog on reading the text would take the Enter as its answer.
func typeText(e *entry, text string, enter, guard bool) error {
	p := e.P
	if err := p.Input([]byte(text), guard); err != nil {
		return err
	}
	if !enter {
		return nil
	}
	p.AwaitRead(EnterReadWait)
	read := time.Now()
	time.Sleep(EnterDelay)
	if guard {
		p.AwaitSettled(read, EnterSettleWait)
	}
	if err := p.Input([]byte("\r"), guard); err != nil {
		return fmt.Errorf("the text was typed but Enter was not: %w", err)
	}
	if !guard || strings.ContainsAny(text, "\r\n") || enterTaken(p, text) {
		return nil
	}
	// Still in the input box: the Enter was dropped (Gemini CLI dropped
	// one in ~17; opencode under load, a second after its input box was
	// drawn, dropped two in a row). Again, a little later each time, while
	// the agent is still waiting for it.
	for try := 1; try < EnterTries; try++ {
		if d := p.Info().Decision; (d.State == combine.Working && d.Kind != detect.KindSubmitted) || d.State == combine.Blocked {
			return nil
		}
		if try > 1 {
			time.Sleep(time.Duration(try-1) * EnterRetryGap)
			if enterTaken(p, text) {
				return nil
			}
		}
		if err := p.Input([]byte("\r"), guard); err != nil {
			return fmt.Errorf("the text was typed but Enter was not: %w", err)
		}
		if enterTaken(p, text) {
			return nil
		}
	}
	return ErrEnterNotTaken
}

// EnterTries is how many Enters a send presses while the text stays in
// the input box; EnterRetryGap, times the try, spaces the later ones (the
// fourth comes about 4 s after the first).
const (
	EnterTries    = 4
	EnterRetryGap = 400 * time.Millisecond
)

// ErrEnterNotTaken says the text is still in the agent's input box after
// EnterTries Enters.
var ErrEnterNotTaken = fmt.Errorf("the text was typed and Enter pressed %d times, but the text is still in the input box: the agent did not take it; see corral screen", EnterTries)

// EnterTakeWait bounds the wait for an Enter to take the text out of the
// input box.
const EnterTakeWait = 600 * time.Millisecond

// enterTaken reports whether the text has left the cursor's row (where an
// input box holds what is typed) within EnterTakeWait; a screen whose
// cursor row never held it says nothing against the Enter.
func enterTaken(p *pane.Pane, text string) bool {
	tail := []rune(strings.TrimSpace(text))
	if len(tail) == 0 {
		return true
	}
	if len(tail) > 24 {
		tail = tail[len(tail)-24:]
	}
	deadline := time.Now().Add(EnterTakeWait)
	for {
		snap := p.Snapshot()
		if snap.CursorY < 0 || snap.CursorY >= len(snap.Lines) || !strings.Contains(snap.Lines[snap.CursorY], string(tail)) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ErrStarting refuses typing into an agent that is not ready for input.
var ErrStarting = errors.New("the agent is still starting")

// awaitReady waits, at most wait, while the pane's agent is starting: text
// typed before it takes input is lost (Claude Code drops an Enter typed as
// its input box appears).
func awaitReady(ctx context.Context, p *pane.Pane, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		d := p.Info().Decision
		if d.State != combine.Working || d.Kind != detect.KindStarting {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %v (%s); try again later, or type with --force", ErrStarting, wait, d.Message)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
