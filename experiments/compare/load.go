// Package compare computes the comparison of recorded runs, the data model every report
// is written from: per step and run the figures (responses, bytes, ACKs and NACKs, the
// data-plane probes, the steady load of lab run --load and its timeline, on-demand
// fetches), the per-resource versions at every checkpoint, the findings computed from
// them, each attributed to the protocol or an implementation with its sources
// (attribution.go), what differs between SotW and delta by the protocol and what the
// configuration adds (differences.go), and the parsed sequence diagram of each step
// (diagram.go). Every figure comes from analysis.Summarize or directly from the recorded
// xds.log events, so `lab compare` can never disagree with summary.json.
//
// Two runs make a Report (Compare): its headline, findings and, for two different
// clients (Envoy and grpc-go), where the clients themselves differ (clients.go), from
// each run's xds.log and the client's own view kept at the step (clients_view.go). Two
// or more make a Matrix (CompareMatrix), a column per run, whose findings are the two-run
// findings of each SotW/delta pair with the same cache, compared across the pairs: the
// protocol only when they hold with both caches. A scale sweep (LoadScale, bench.json)
// adds what a change costs at large N.
//
// Report and Matrix are the JSON format as they are; experiments/compare/render writes
// them as text, Markdown or HTML, and is the only package that reads the accessors kept
// for it (Cites, Why, Scale.Choosing). Callers: cmd/lab (lab compare), experiments/mainjob
// (make lab's report), and the tests of tap, serve and bench, which compare what they
// record. Words and figures both sides write alike are compare/internal/words'.
//
// Write (request.go) is `lab compare`: the runs of a Request (folders of runs expanded,
// a run given twice refused or warned of) loaded, compared and the report written.
package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Meta is run.json, written by the runner. Every field may be empty: a run directory
// written by hand or by an older runner still compares.
type Meta struct {
	Mode         protocol.Mode `json:"mode"`
	Client       string        `json:"client"`        // "envoy", "grpc" or "simulated"
	EnvoyVersion string        `json:"envoy_version"` // e.g. "1.40.0"
	SotwVersions string        `json:"sotw_versions"` // "uniform", "per-type" or ""
	NackPolicy   string        `json:"nack_policy"`   // "resend", "hold" or ""
	Cache        string        `json:"cache"`         // "snapshot", "linear" or "" (older runs: snapshot)
	Started      string        `json:"started"`       // RFC 3339
	Steps        []string      `json:"steps"`
}

// Run is one recorded run, loaded and summarized. It is not safe for concurrent use: the
// first comparison or diagram caches its replay in it.
type Run struct {
	// Label is "A", "B", "C", ...: the position on the command line (RunLabel).
	Label string
	// Path is the RUN argument as given (a directory or an xds.log file).
	Path string
	// LogPath is the xds.log that was read.
	LogPath string
	// Meta is run.json; nil when the run has none (options unknown).
	Meta *Meta
	// EnvoyResult is envoy.result ("PASS", "FAIL: reason", "NOT_RUN"); "" when absent.
	EnvoyResult string
	// Mode is the protocol of every event in the log.
	Mode    protocol.Mode
	Events  []xdslog.Event
	Stats   xdslog.ReadStats
	Summary *analysis.Summary

	// replayed caches the findings' and diagrams' pass over Events (see replay).
	replayed *replayed
	// named caches the resources the log names (see resources).
	named map[resourceKey]bool
}

// Name is how findings and diagrams refer to the run: its label and mode ("A sotw").
func (r *Run) Name() string { return r.Label + " " + r.Mode.String() }

// Load reads a run: path is a directory holding xds.log (and optionally run.json and
// envoy.result) or an xds.log file. Sidecar files are read from the directory, or from
// beside a file named xds.log; a log under any other name is read alone. Every error is
// one line that names the run.
func Load(label, path string) (*Run, error) { return LoadSession(label, path, 0) }

// LoadSession is Load for one session of a log that several `lab serve` sessions appended
// to (1 is the first). Session 0 means the log must hold only one: two sessions are never
// merged unknowingly, since both start again at server 1, stream 1, version 1.
func LoadSession(label, path string, session int) (*Run, error) {
	r, err := load(label, path, session)
	if err != nil {
		return nil, oneLine(fmt.Errorf("run %s (%s): %w", label, path, err))
	}
	return r, nil
}

func load(label, path string, session int) (*Run, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("no such file or directory")
	case err != nil:
		return nil, err
	}
	logPath, dir := path, ""
	if fi.IsDir() {
		logPath, dir = filepath.Join(path, "xds.log"), path
		if _, err := os.Stat(logPath); errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("directory has no xds.log")
		}
	} else if filepath.Base(path) == "xds.log" {
		dir = filepath.Dir(path)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		return nil, fmt.Errorf("read xds.log: %w", err)
	}
	r, err := fromLog(label, data, session)
	if err != nil {
		return nil, err
	}
	r.Path, r.LogPath = path, logPath
	if dir == "" {
		return r, nil
	}
	if r.Meta, err = readMeta(filepath.Join(dir, "run.json")); err != nil {
		return nil, err
	}
	if r.Meta != nil && r.Meta.Mode != r.Mode {
		return nil, fmt.Errorf("run.json says mode %q but xds.log was recorded in %q", r.Meta.Mode, r.Mode)
	}
	if r.EnvoyResult, err = readEnvoyResult(filepath.Join(dir, "envoy.result")); err != nil {
		return nil, err
	}
	return r, nil
}

// FromLog builds a run from the bytes of an xds.log alone (no run.json): the fuzz target
// and tests use it, and Load uses it for the log part.
func FromLog(label string, data []byte) (*Run, error) { return fromLog(label, data, 0) }

func fromLog(label string, data []byte, session int) (*Run, error) {
	ev, st, err := xdslog.Read(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	sessions := xdslog.Sessions(ev)
	flag := "--session-" + strings.ToLower(label)
	switch {
	case session == 0 && len(sessions) > 1 && label != "A" && label != "B":
		// Only the first two runs have a session flag: a matrix of serve sessions is rare,
		// and a flag per letter would be 26 flags.
		return nil, fmt.Errorf("xds.log holds %d sessions (each lab serve appends one); give it as RUN_A or RUN_B and choose one with --session-a or --session-b N (1-%d)", len(sessions), len(sessions))
	case session == 0 && len(sessions) > 1:
		return nil, fmt.Errorf("xds.log holds %d sessions (each lab serve appends one); choose one with %s N (1-%d)", len(sessions), flag, len(sessions))
	case session < 0 || session > len(sessions):
		return nil, fmt.Errorf("%s %d: xds.log holds %d session(s) (want 1-%d)", flag, session, len(sessions), len(sessions))
	case session > 0:
		ev = sessions[session-1]
	}
	mode := ev[0].Mode
	for _, e := range ev {
		if e.Mode != mode {
			// One log is one front end; a mixed log would make every figure meaningless.
			return nil, fmt.Errorf("xds.log mixes modes %q and %q", mode, e.Mode)
		}
	}
	sum := analysis.Summarize(ev)
	return &Run{Label: label, Mode: mode, Events: ev, Stats: st, Summary: sum}, nil
}

// readMeta reads run.json; a missing file is not an error (options unknown).
func readMeta(path string) (*Meta, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read run.json: %w", err)
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	if err := m.Mode.Check(); err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	return &m, nil
}

// readEnvoyResult reads envoy.result; a missing file is not an error.
func readEnvoyResult(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read envoy.result: %w", err)
	}
	s := strings.TrimSpace(string(data))
	if s == "PASS" || s == "NOT_RUN" || strings.HasPrefix(s, "FAIL:") {
		return s, nil
	}
	return "", fmt.Errorf("envoy.result: want PASS, FAIL: reason or NOT_RUN, got %q", words.Clip(s, 60))
}

// oneLine keeps an error on one line: paths and file contents can hold newlines, and
// the CLI promises one error line.
func oneLine(err error) error {
	msg := err.Error()
	if !strings.ContainsAny(msg, "\r\n") {
		return err
	}
	return errors.New(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(msg))
}
