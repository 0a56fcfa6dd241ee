package xdslog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ReadStats says what a reader passed over.
type ReadStats struct {
	Lines   int // non-empty lines seen
	Skipped int // lines that were not valid events (truncated, wrong types, unknown event)
	// FirstSkip describes the first skipped line, for error messages.
	FirstSkip string
}

// maxLine bounds one line: a SotW send of 10,000 clusters is about 1.5 MB.
const maxLine = 64 << 20

// Read parses an xds.log. Lines that are not valid events (truncated JSON, wrong field
// types, an unknown event or mode, a missing timestamp) are skipped and counted. A log
// with no valid event is an error.
func Read(r io.Reader) ([]Event, ReadStats, error) {
	var events []Event
	st, err := Scan(r, func(e Event) { events = append(events, e) })
	if err != nil {
		return events, st, err
	}
	if len(events) == 0 {
		if st.Lines == 0 {
			return nil, st, errors.New("xds.log is empty")
		}
		return nil, st, fmt.Errorf("xds.log has no valid event (%d lines skipped; first: %s)", st.Skipped, st.FirstSkip)
	}
	return events, st, nil
}

// Scan is Read one event at a time: it calls fn with every valid event, in order, and
// holds none, so a reader of a log of gigabytes (a churn soak's) needs memory for one
// line, not the log. Lines are skipped and counted as Read does; an empty log is no
// error here.
func Scan(r io.Reader, fn func(Event)) (ReadStats, error) {
	var st ReadStats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	lineNo := 0
	skip := func(why string) {
		st.Skipped++
		if st.FirstSkip == "" {
			st.FirstSkip = fmt.Sprintf("line %d: %s", lineNo, why)
		}
	}
	for sc.Scan() {
		lineNo++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		st.Lines++
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			skip(err.Error())
			continue
		}
		switch {
		case !KnownEvents[e.Event]:
			skip(fmt.Sprintf("unknown event %q", e.Event))
		case e.Mode.Check() != nil:
			skip(fmt.Sprintf("unknown mode %q", e.Mode))
		case e.TS.IsZero():
			skip("no timestamp")
		default:
			fn(e)
		}
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("read xds.log line %d: %w", lineNo+1, err)
	}
	return st, nil
}

// ReadFile reads an xds.log file, or the xds.log inside a run directory.
func ReadFile(path string) ([]Event, ReadStats, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, ReadStats{}, fmt.Errorf("open run %s: %w", path, err)
	}
	if fi.IsDir() {
		path = filepath.Join(path, "xds.log")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, ReadStats{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	ev, st, err := Read(f)
	if err != nil {
		return ev, st, fmt.Errorf("%s: %w", path, err)
	}
	return ev, st, nil
}

// Sessions splits a log's events at its session lines (Recorder.BeginSession). A log
// without any is one session; so are the lines before the first session line. Readers
// that compute figures must take one session at a time: two `lab serve` sessions
// appended to the same file both start at server 1, stream 1, version 1.
func Sessions(events []Event) [][]Event {
	var out [][]Event
	start := 0
	for i, e := range events {
		if e.Event == EventSession && i > start {
			out = append(out, events[start:i])
			start = i
		}
	}
	if start < len(events) {
		out = append(out, events[start:])
	}
	return out
}

// StepNames lists the scenario steps of an xds.log file, or of the xds.log inside a run
// directory, in the order their step events first appear. It decodes only the step
// events, so it is cheap on a large log (shell completion calls it).
func StepNames(path string) ([]string, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open run %s: %w", path, err)
	} else if fi.IsDir() {
		path = filepath.Join(path, "xds.log")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	var (
		names []string
		seen  = map[string]bool{}
	)
	marker := []byte(`"event":"` + EventStep + `"`)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		b := sc.Bytes()
		if !bytes.Contains(b, marker) {
			continue
		}
		var e struct {
			Event string `json:"event"`
			Step  string `json:"step"`
		}
		if json.Unmarshal(b, &e) != nil || e.Event != EventStep || e.Step == "" || seen[e.Step] {
			continue
		}
		seen[e.Step] = true
		names = append(names, e.Step)
	}
	if err := sc.Err(); err != nil {
		return names, fmt.Errorf("read %s: %w", path, err)
	}
	return names, nil
}
