// Package replay reads recordings (asciicast v2 or raw bytes) and runs the
// detection engine over them on the recording's own clock.
package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Recording is a parsed recording.
type Recording struct {
	Cols, Rows int
	Title      string
	Events     []Event
	// Skipped counts lines that were not valid events (kept out, never fatal).
	Skipped int
}

// Event is one timed entry of a recording.
type Event struct {
	At   time.Duration
	Code string // "o" output, "i" input, "m" marker, "r" resize
	Data string
}

// MaxLine bounds one line of a cast file.
const MaxLine = 64 << 20

// Parse reads an asciicast v2 file if the data starts with its JSON header,
// and otherwise treats the data as raw output bytes at time zero. Raw files
// made by script(1) begin with a "Script started" header line, which is
// dropped. defCols/defRows size raw recordings.
func Parse(data []byte, defCols, defRows int) (*Recording, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if rec, err := parseCast(data); err == nil {
			return rec, nil
		} else if looksLikeCastHeader(trimmed) {
			return nil, err
		}
	}
	if bytes.HasPrefix(data, []byte("Script started")) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return &Recording{Cols: defCols, Rows: defRows, Events: []Event{{Code: "o", Data: string(data)}}}, nil
}

func looksLikeCastHeader(b []byte) bool {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return bytes.Contains(line, []byte(`"version"`))
}

type castHeader struct {
	Version int    `json:"version"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Title   string `json:"title"`
}

func parseCast(data []byte) (*Recording, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	if !sc.Scan() {
		return nil, errors.New("empty cast")
	}
	var h castHeader
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		return nil, fmt.Errorf("cast header (line 1): %w", err)
	}
	if h.Version != 2 {
		return nil, fmt.Errorf("cast header (line 1): version %d; only asciicast v2 is read", h.Version)
	}
	if h.Width <= 0 || h.Height <= 0 || h.Width > 10000 || h.Height > 10000 {
		return nil, fmt.Errorf("cast header (line 1): size %dx%d is out of range", h.Width, h.Height)
	}
	rec := &Recording{Cols: h.Width, Rows: h.Height, Title: h.Title}
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, ok := parseEvent(line)
		if !ok {
			rec.Skipped++
			continue
		}
		rec.Events = append(rec.Events, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read cast: %w", err)
	}
	return rec, nil
}

func parseEvent(line []byte) (Event, bool) {
	var raw []json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil || len(raw) != 3 {
		return Event{}, false
	}
	var at float64
	var code, data string
	if json.Unmarshal(raw[0], &at) != nil || json.Unmarshal(raw[1], &code) != nil || json.Unmarshal(raw[2], &data) != nil {
		return Event{}, false
	}
	if at < 0 || at > 1e9 {
		return Event{}, false
	}
	return Event{At: time.Duration(at * float64(time.Second)), Code: code, Data: data}, true
}

// Markers returns the recording's "m" events.
func (r *Recording) Markers() []Event {
	var out []Event
	for _, e := range r.Events {
		if e.Code == "m" {
			out = append(out, e)
		}
	}
	return out
}

// ParseResize reads an "r" event's "COLSxROWS".
func ParseResize(s string) (cols, rows int, ok bool) {
	c, r, found := strings.Cut(s, "x")
	if !found {
		return 0, 0, false
	}
	_, err1 := fmt.Sscanf(c, "%d", &cols)
	_, err2 := fmt.Sscanf(r, "%d", &rows)
	return cols, rows, err1 == nil && err2 == nil && cols > 0 && rows > 0 && cols <= 10000 && rows <= 10000
}

// ReadAll reads a recording from r.
func ReadAll(r io.Reader, defCols, defRows int) (*Recording, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<30))
	if err != nil {
		return nil, err
	}
	return Parse(data, defCols, defRows)
}
