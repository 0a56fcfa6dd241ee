package adsfuzz

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/xds-workbench/lab/shared/syncbuf"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// CheckLog checks the xds.log lines written while one script ran: every line is a valid
// event, no stream was given two ACK/NACK verdicts for one (type, nonce), and the
// witness streams (which sent nothing meanwhile) have no events: another stream's
// hostility does not reach them.
func CheckLog(lines string, witness map[int64]bool) error {
	if lines == "" {
		return nil
	}
	ev, st, err := xdslog.Read(strings.NewReader(lines))
	if err != nil {
		return fmt.Errorf("read xds.log: %w", err)
	}
	if st.Skipped > 0 {
		return fmt.Errorf("xds.log has %d invalid lines, first: %s", st.Skipped, st.FirstSkip)
	}
	type key struct {
		stream     int64
		typ, nonce string
	}
	verdicts := map[key]string{}
	for _, e := range ev {
		if witness[e.Stream] {
			return fmt.Errorf("witness stream %d got a %s event", e.Stream, e.Event)
		}
		if e.Event != xdslog.EventAck && e.Event != xdslog.EventNack {
			continue
		}
		k := key{e.Stream, e.Type, e.Nonce}
		if prev, ok := verdicts[k]; ok {
			return fmt.Errorf("stream %d type %s nonce %q: %s after %s", e.Stream, e.Type, e.Nonce, e.Event, prev)
		}
		verdicts[k] = e.Event
	}
	return nil
}

// WaitGoroutines waits until at most baseline goroutines run, for up to d: a stream's
// goroutines (gRPC's and the front end's) end shortly after the stream does, not at once.
func WaitGoroutines(baseline int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline {
			return nil
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			return fmt.Errorf("%d goroutines, want <= %d after the script; stacks:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// WaitStreams waits until the recorder models only the witness streams, for up to d:
// the per-stream state (accepted versions, remembered nonces) is released with the
// stream, so memory per stream is bounded by the stream's lifetime.
func WaitStreams(rec *xdslog.Recorder, witness map[int64]bool, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		var extra []int64
		for _, s := range rec.Status() {
			if !witness[s.Stream] {
				extra = append(extra, s.Stream)
			}
		}
		if len(extra) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("recorder still models streams %v after the script", extra)
		}
		time.Sleep(time.Millisecond)
	}
}

// Log is an xds.log in memory that a fuzz target drains after each input (Take), so
// that checking one input reads only its own lines however long the run.
type Log = syncbuf.Buffer
