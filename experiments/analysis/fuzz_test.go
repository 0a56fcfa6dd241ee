package analysis

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// FuzzSummarize feeds arbitrary bytes through what summary.json is made of: xdslog.Read,
// then Summarize, then JSON encoding. Nothing may panic. A log is either refused with a
// one-line error or read with every non-empty line accounted for (an event or a counted
// skip), and its summary always encodes (no NaN or infinity) with totals that add up.
// The seed corpus (testdata/fuzz/FuzzSummarize) has truncated lines, wrong field types,
// unknown events and modes, an empty file, odd timestamps, huge numbers, binary bytes,
// CRLF line ends and small valid logs of both modes.
func FuzzSummarize(f *testing.F) {
	f.Add([]byte(`{"ts":"2026-01-02T03:04:05Z","event":"publish","mode":"sotw","step":"initial","version":"1"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, st, err := xdslog.Read(bytes.NewReader(data))
		if st.Skipped > st.Lines || st.Skipped < 0 {
			t.Fatalf("skipped %d of %d lines", st.Skipped, st.Lines)
		}
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			if len(ev) != 0 {
				t.Fatalf("error %v with %d events", err, len(ev))
			}
			return
		}
		if len(ev)+st.Skipped != st.Lines {
			t.Fatalf("%d events + %d skipped != %d lines", len(ev), st.Skipped, st.Lines)
		}
		if st.Skipped > 0 && st.FirstSkip == "" {
			t.Fatal("skipped lines without a description")
		}
		s := Summarize(ev)
		s.Skipped = st.Skipped
		if s.Events != len(ev) {
			t.Fatalf("summary counts %d events, read %d", s.Events, len(ev))
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("summary does not encode: %v", err)
		}
		var total TypeFigures
		names := map[string]bool{}
		for _, step := range s.Steps {
			if names[step.Name] {
				t.Fatalf("step %q listed twice", step.Name)
			}
			names[step.Name] = true
			var st TypeFigures
			for _, tf := range step.Types {
				add(&st, tf)
			}
			if st != step.Total {
				t.Fatalf("step %q: total %+v is not the sum of its types %+v", step.Name, step.Total, st)
			}
			add(&total, &step.Total)
			if step.NackRate < 0 {
				t.Fatalf("step %q: negative NACK rate %v", step.Name, step.NackRate)
			}
		}
		if total != s.Total {
			t.Fatalf("total %+v is not the sum of the steps %+v", s.Total, total)
		}
	})
}
