package churn

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// Verdict is one judgement of a run: passed, and why not.
type Verdict struct {
	Name    string   `json:"name"`
	Passed  bool     `json:"passed"`
	Reasons []string `json:"reasons,omitempty"`
	// Figures are what was judged, in words ("heap 41.2 MiB -> 43.0 MiB (+4.4%)").
	Figures []string `json:"figures"`
}

func (v *Verdict) fail(format string, args ...any) {
	v.Passed = false
	v.Reasons = append(v.Reasons, fmt.Sprintf(format, args...))
}

// window is how many samples a level is the median of, at the baseline and at the end,
// so that one sample taken mid-churn (a burst of reconnects) does not decide.
const window = 3

// level is the median of v over the up-to-window samples from index i.
func level(samples []Sample, i int, v func(Sample) float64) float64 {
	var xs []float64
	for j := i; j < len(samples) && j < i+window; j++ {
		xs = append(xs, v(samples[j]))
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// baselineIndex is the first sample at or after baseline; -1 when the run has fewer than
// two windows of samples from there (nothing to compare).
func baselineIndex(samples []Sample, baseline time.Duration) int {
	for i, s := range samples {
		if s.Elapsed >= baseline {
			if len(samples)-i < 2*window {
				return -1
			}
			return i
		}
	}
	return -1
}

// GrowthVerdict judges heap, goroutines and open fds: the median of the last window
// of samples may exceed the median of the window at the baseline by at most limit (0.10:
// 10%). Something that leaks per client, per publish or per Envoy restart grows with the
// run and fails; a level that was reached by the baseline and held passes.
func GrowthVerdict(samples []Sample, baseline time.Duration, limit float64) Verdict {
	v := Verdict{Name: "growth", Passed: true}
	b := baselineIndex(samples, baseline)
	if b < 0 {
		v.fail("too few samples after the baseline at %s to judge (%d in all, need %d from it)", baseline, len(samples), 2*window)
		return v
	}
	end := len(samples) - window
	for _, m := range []struct {
		name string
		v    func(Sample) float64
	}{
		{"heap bytes", func(s Sample) float64 { return float64(s.HeapBytes) }},
		{"goroutines", func(s Sample) float64 { return float64(s.Goroutines) }},
		{"open fds", func(s Sample) float64 { return float64(s.FDs) }},
	} {
		from, to := level(samples, b, m.v), level(samples, end, m.v)
		grew := to/from - 1
		v.Figures = append(v.Figures, fmt.Sprintf("%s %.0f -> %.0f (%+.1f%%)", m.name, from, to, 100*grew))
		if grew > limit {
			v.fail("%s grew %.1f%% (%.0f -> %.0f), over %.0f%%", m.name, 100*grew, from, to, 100*limit)
		}
	}
	return v
}

// LogRateVerdict judges the xds.logs' growth, which grows by design (every publish
// sends to every client): over the last third of the run it may grow faster than over
// the window after the baseline by at most limit, per publish *and* per second. Either
// alone misleads: publishes come from a ticker that drops ticks on a busy machine while
// client churn and Envoy restarts (the log's other writers) keep their pace, so bytes
// per publish rise when the machine is slow; a slower publisher writes fewer bytes per
// second. A resend loop or a storm raises both and fails.
func LogRateVerdict(samples []Sample, baseline time.Duration, limit float64) Verdict {
	v := Verdict{Name: "log rate", Passed: true}
	b := baselineIndex(samples, baseline)
	if b < 0 {
		v.fail("too few samples after the baseline at %s to judge", baseline)
		return v
	}
	perPublish := func(from, to Sample) float64 {
		if to.Publishes <= from.Publishes {
			return 0
		}
		return float64(to.LogBytes-from.LogBytes) / float64(to.Publishes-from.Publishes)
	}
	perSecond := func(from, to Sample) float64 {
		if to.Elapsed <= from.Elapsed {
			return 0
		}
		return float64(to.LogBytes-from.LogBytes) / (to.Elapsed - from.Elapsed).Seconds()
	}
	n := len(samples)
	a0, a1 := samples[b], samples[b+window-1]
	z0, z1 := samples[max(b+window-1, n-1-(n-b)/3)], samples[n-1]
	first, last := perPublish(a0, a1), perPublish(z0, z1)
	firstT, lastT := perSecond(a0, a1), perSecond(z0, z1)
	v.Figures = append(v.Figures, fmt.Sprintf("log bytes per publish %.0f -> %.0f", first, last),
		fmt.Sprintf("log bytes per second %.0f -> %.0f", firstT, lastT))
	switch {
	case first == 0 || firstT == 0:
		v.fail("nothing published or logged in the first window after the baseline")
	case last/first-1 > limit && lastT/firstT-1 > limit:
		v.fail("log bytes per publish grew %.1f%% (%.0f -> %.0f) and per second %.1f%% (%.0f -> %.0f), over %.0f%%",
			100*(last/first-1), first, last, 100*(lastT/firstT-1), firstT, lastT, 100*limit)
	}
	return v
}

// LogIntegrity is what a reading of one xds.log found.
type LogIntegrity struct {
	Lines int `json:"lines"`
	// Torn counts lines that are not a valid event, and a last line without its newline.
	Torn  int `json:"torn"`
	Sends int `json:"sends"`
	// Answered sends had an ACK or NACK; Closed were still unanswered when their stream
	// closed (recorded as dropped); Lost had neither.
	Answered  int `json:"answered"`
	Closed    int `json:"closed_unanswered"`
	Lost      int `json:"lost"`
	Unmatched int `json:"unmatched"`
	// Open counts streams without a stream_close at the end of the log.
	Open int `json:"open"`
}

// sendKey names one send.
type sendKey struct {
	server int
	stream int64
	typ    string
	nonce  string
}

// CheckLog reads the xds.log at path one event at a time (xdslog.Scan) and accounts
// every send: answered by an ACK/NACK of its nonce, or followed by its stream's close.
// The same events are replayed through an xdslog.Model, whose Status after the last line
// must list no open stream (the control plane was stopped, so every stream closed).
func CheckLog(path string) (LogIntegrity, error) {
	var li LogIntegrity
	f, err := os.Open(path)
	if err != nil {
		return li, fmt.Errorf("check log: %w", err)
	}
	defer f.Close()
	pending := map[sendKey]bool{}
	model := xdslog.NewModel(nil)
	st, err := xdslog.Scan(f, func(e xdslog.Event) {
		model.Observe(e)
		li.account(e, pending)
	})
	if err != nil {
		return li, fmt.Errorf("check log %s: %w", filepath.Base(path), err)
	}
	li.Lines, li.Torn = st.Lines, st.Skipped
	if !endsWithNewline(f) {
		li.Torn++
	}
	li.Lost = len(pending)
	li.Open = len(model.Status())
	return li, nil
}

// account applies one event to the tally of sends.
func (li *LogIntegrity) account(e xdslog.Event, pending map[sendKey]bool) {
	switch e.Event {
	case xdslog.EventSend:
		li.Sends++
		pending[sendKey{e.Server, e.Stream, e.Type, e.Nonce}] = true
	case xdslog.EventAck, xdslog.EventNack:
		k := sendKey{e.Server, e.Stream, e.Type, e.Nonce}
		if pending[k] {
			li.Answered++
			delete(pending, k)
		}
	case xdslog.EventUnmatched:
		li.Unmatched++
	case xdslog.EventStreamClose:
		for k := range pending {
			if k.server == e.Server && k.stream == e.Stream {
				li.Closed++
				delete(pending, k)
			}
		}
	}
}

// endsWithNewline reports whether f's last byte is a newline (an empty file is whole).
func endsWithNewline(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err == nil
	}
	b := make([]byte, 1)
	_, err = f.ReadAt(b, fi.Size()-1)
	return err == nil && b[0] == '\n'
}

// IntegrityVerdict judges the logs: 0 torn lines, 0 lost sends, 0 unmatched answers and
// no stream left open.
func IntegrityVerdict(logs map[string]LogIntegrity) Verdict {
	v := Verdict{Name: "log integrity", Passed: true}
	for _, name := range slices.Sorted(maps.Keys(logs)) {
		li := logs[name]
		v.Figures = append(v.Figures, fmt.Sprintf("%s: %d lines, %d torn, %d sends (%d answered, %d closed unanswered, %d lost), %d unmatched, %d open streams",
			name, li.Lines, li.Torn, li.Sends, li.Answered, li.Closed, li.Lost, li.Unmatched, li.Open))
		if li.Torn > 0 || li.Lost > 0 || li.Unmatched > 0 || li.Open > 0 {
			v.fail("%s: %d torn, %d lost, %d unmatched, %d open", name, li.Torn, li.Lost, li.Unmatched, li.Open)
		}
	}
	return v
}

// OrphanVerdict judges the end: none of pids (every Envoy started) alive, and no child
// process of self left (found by parent pid in /proc/*/stat), zombies included.
func OrphanVerdict(pids []int, self int) Verdict {
	v := Verdict{Name: "orphans", Passed: true}
	var alive []int
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			alive = append(alive, pid)
		}
	}
	kids := children(self)
	v.Figures = append(v.Figures, fmt.Sprintf("%d Envoy pids started, %d alive; %d children left", len(pids), len(alive), len(kids)))
	if len(alive) > 0 {
		v.fail("Envoy pids still alive: %v", alive)
	}
	if len(kids) > 0 {
		v.fail("child processes left: %v", kids)
	}
	return v
}

// children lists the pids whose parent is ppid.
func children(ppid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
		}
	}
	return out
}
