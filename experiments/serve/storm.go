package serve

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// stormWatch tells the console about NACK storms, which otherwise happen in silence: the
// library's SotW server re-sends a rejected response at once, the client rejects it again,
// and xds.log grows by megabytes a second. It observes the recorder's events (quickly,
// under the recorder's lock) and prints from its own goroutine: a warning when a storm is
// detected, a summary every `every` while it lasts, and one line when it ends.
type stormWatch struct {
	out     io.Writer
	every   time.Duration
	quiet   time.Duration // no NACK for this long ends a storm
	logSize func() int64  // the log's size now
	limit   int64         // the recorder condenses storms past this size (0: never)
	now     func() time.Time

	mu     sync.Mutex
	storms map[stormKey]*stormState
	ended  []endedStorm
}

type stormKey struct {
	stream int64
	typ    string
}

type stormState struct {
	start, last, reported time.Time
	nacks                 int
	warned                bool
}

func newStormWatch(out io.Writer, every time.Duration, logSize func() int64, limit int64) *stormWatch {
	return &stormWatch{out: out, every: every, quiet: 2 * time.Second, logSize: logSize, limit: limit,
		now: time.Now, storms: map[stormKey]*stormState{}}
}

// observe is the recorder's observer.
func (w *stormWatch) observe(e xdslog.Event) {
	if e.Event != xdslog.EventNack && e.Event != xdslog.EventAck && e.Event != xdslog.EventStreamClose {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	k := stormKey{e.Stream, e.Type}
	switch e.Event {
	case xdslog.EventNack:
		s := w.storms[k]
		if s == nil {
			if e.Repeat < xdslog.StormRepeats {
				return
			}
			s = &stormState{start: e.TS, reported: e.TS}
			w.storms[k] = s
		}
		s.nacks++
		s.last = e.TS
	case xdslog.EventAck:
		w.endLocked(k, "ended by an ACK")
	case xdslog.EventStreamClose:
		for kk := range w.storms {
			if kk.stream == e.Stream {
				w.endLocked(kk, "stream closed")
			}
		}
	}
}

func (w *stormWatch) endLocked(k stormKey, why string) {
	s, ok := w.storms[k]
	if !ok {
		return
	}
	delete(w.storms, k)
	w.ended = append(w.ended, endedStorm{k, s, why})
}

// endedStorm is a storm that ended since the last tick.
type endedStorm struct {
	key stormKey
	s   *stormState
	why string
}

// tick prints what changed since the last tick; run calls it every `every`, and tests
// call it directly.
func (w *stormWatch) tick() {
	// Read the size first: logSize takes the recorder's lock, and the recorder calls
	// observe (which takes w.mu) while holding it.
	size := w.logSize()
	w.mu.Lock()
	now := w.now()
	var lines []string
	for _, k := range slices.SortedFunc(maps.Keys(w.storms), func(a, b stormKey) int {
		return cmp.Or(cmp.Compare(a.stream, b.stream), cmp.Compare(a.typ, b.typ))
	}) {
		s := w.storms[k]
		d := s.last.Sub(s.start)
		switch {
		case !s.warned:
			s.warned = true
			s.reported = now
			lines = append(lines, fmt.Sprintf("warning: NACK storm on stream %d %s: the client rejected the same content %s times in %s (%s/s). "+
				"The SotW server re-sends a rejected response at once; publish a valid state (valid) or serve with --nack-policy hold. %s",
				k.stream, k.typ, count(s.nacks+xdslog.StormRepeats-1), d.Round(time.Millisecond), rate(s.nacks, d), w.sizeNote(size)))
		case now.Sub(s.last) >= w.quiet:
			w.endLocked(k, "quiet")
		case now.Sub(s.reported) >= w.every:
			s.reported = now
			lines = append(lines, fmt.Sprintf("storm: stream %d %s: %s NACKs in %s (%s/s). %s",
				k.stream, k.typ, count(s.nacks), d.Round(time.Millisecond), rate(s.nacks, d), w.sizeNote(size)))
		}
	}
	for _, x := range w.ended {
		d := x.s.last.Sub(x.s.start)
		lines = append(lines, fmt.Sprintf("storm over: stream %d %s: %s NACKs in %s (%s/s), %s; xds.log %s",
			x.key.stream, x.key.typ, count(x.s.nacks), d.Round(time.Millisecond), rate(x.s.nacks, d), x.why, mib(size)))
	}
	w.ended = nil
	w.mu.Unlock()
	for _, l := range lines {
		fmt.Fprintln(w.out, l)
	}
}

func (w *stormWatch) sizeNote(size int64) string {
	switch {
	case w.limit <= 0:
		return fmt.Sprintf("xds.log %s (no --max-log-size: every pair is written)", mib(size))
	case size >= w.limit:
		return fmt.Sprintf("xds.log %s: past --max-log-size %s, the storm is written as one summary line per second", mib(size), mib(w.limit))
	default:
		return fmt.Sprintf("xds.log %s of --max-log-size %s", mib(size), mib(w.limit))
	}
}

// run ticks until done is closed, then reports what is left.
func (w *stormWatch) run(done <-chan struct{}) {
	t := time.NewTicker(min(w.every, 500*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			w.tick()
		case <-done:
			w.tick()
			return
		}
	}
}

func rate(n int, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return count(int(float64(n) / d.Seconds()))
}

// count writes n with thousands separators.
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
