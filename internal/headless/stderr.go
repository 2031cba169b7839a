package headless

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// stderrRetry matches the lines in which agents that say so only on
// stderr retry the model API (Gemini CLI: "Attempt 2 failed. Retrying
// with backoff... Error: …").
var stderrRetry = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:Attempt \d+ failed\. Retrying|Retrying (?:after|in|with)|.*\bretrying\b.*\battempt\b)`)
})

// StderrEvent reads one stderr line: a retry of the model API is an event
// (the run is not silent, it is waiting); anything else is not.
func StderrEvent(line string) (Event, bool) {
	line = strings.TrimSpace(line)
	if stderrRetry().MatchString(line) {
		return Event{Type: EventRetry, Subtype: "stderr", Text: clip(line)}, true
	}
	return Event{}, false
}

// stderrLines splits what is written to it into lines and offers each to
// out without ever blocking the writer (a full channel drops the line:
// stderr is kept whole elsewhere).
type stderrLines struct {
	out  chan<- string
	part []byte
}

func (s *stderrLines) Write(p []byte) (int, error) {
	s.part = append(s.part, p...)
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			break
		}
		line := string(s.part[:i])
		s.part = s.part[i+1:]
		select {
		case s.out <- line:
		default:
		}
	}
	if len(s.part) > clipLine {
		s.part = s.part[:0] // a line this long is no retry notice
	}
	return len(p), nil
}

// stallText says a run is quiet, and what it last said on stderr.
func stallText(quiet time.Duration, lastErr string) string {
	if lastErr == "" {
		return fmt.Sprintf("no output for %v", quiet)
	}
	return fmt.Sprintf("no output for %v; last on stderr: %s", quiet, lastErr)
}

// notableStderr is a stderr line worth naming as the last thing a quiet
// run said: not blank, not a stack frame ("at …").
func notableStderr(line string) string {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(t, "at ") {
		return ""
	}
	return clip(t)
}
