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
	f.Add([]byte(`{"ts":"2026-01-02T03:04:05Z","event":"ack","mode":"sotw","step":"s","type":"EDS"}` + "\n" +
		`{"ts":"2026-01-02T03:04:06Z","event":"traffic","mode":"sotw","step":"s","traffic":{"requests":-1,"by_backend":{"":2},` +
		`"timeline":{"start":"2026-01-02T03:04:05Z","bucket_ms":10,"series":{"v1":[1,-2,3],"503":[9223372036854775807],"x":[]}}}}` + "\n" +
		`{"ts":"2026-01-02T03:04:07Z","event":"traffic","mode":"sotw","step":"t","traffic":{"timeline":{"bucket_ms":-1e308,"series":{"v1":[1]}}}}` + "\n"))
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
				st.Add(tf)
			}
			if st != step.Total {
				t.Fatalf("step %q: total %+v is not the sum of its types %+v", step.Name, step.Total, st)
			}
			total.Add(&step.Total)
			if step.NackRate < 0 {
				t.Fatalf("step %q: negative NACK rate %v", step.Name, step.NackRate)
			}
			if p := step.Probes; p != nil {
				checkProbes(t, step.Name, p)
			}
			if tr := step.Traffic; tr != nil {
				checkTraffic(t, step.Name, tr)
			}
		}
		if total != s.Total {
			t.Fatalf("total %+v is not the sum of the steps %+v", s.Total, total)
		}
	})
}

// checkProbes: a step's weighted probes add up whichever way they are split, and its
// error window is a window.
func checkProbes(t *testing.T, step string, p *Probes) {
	t.Helper()
	sum := func(m map[string]int) int {
		n := 0
		for _, v := range m {
			n += v
		}
		return n
	}
	k := p.Kinds
	switch {
	case p.Probes < 1 || p.OK < 0 || p.Failed < 0 || p.OK+p.Failed != p.Probes:
		t.Fatalf("step %q: %d probes, %d ok, %d failed", step, p.Probes, p.OK, p.Failed)
	case k.Request+k.Window+k.Outage+k.Other != p.Probes:
		t.Fatalf("step %q: kinds %+v do not add up to %d probes", step, k, p.Probes)
	case sum(p.Failures) != p.Failed || sum(p.Backends) != p.OK || sum(p.Clients) != p.Probes:
		t.Fatalf("step %q: failures, backends or clients do not add up: %+v", step, p)
	case len(p.Failures) > maxProbeKeys || len(p.Backends) > maxProbeKeys || len(p.Clients) > maxProbeKeys:
		t.Fatalf("step %q: more than %d keys: %+v", step, maxProbeKeys, p)
	case p.StepMS < 0:
		t.Fatalf("step %q: negative step length %v", step, p.StepMS)
	case p.ErrorWindowMS != nil && *p.ErrorWindowMS < 0:
		t.Fatalf("step %q: negative error window %v", step, *p.ErrorWindowMS)
	}
}

// checkTraffic: a step's checked timeline can be drawn (a positive bucket width, every
// series as long, no negative count, bounded), and its marks lie on it.
func checkTraffic(t *testing.T, step string, tr *Traffic) {
	t.Helper()
	if len(tr.Marks) > maxTrafficMarks || tr.MarksLeftOut < 0 {
		t.Fatalf("step %q: %d marks, %d left out", step, len(tr.Marks), tr.MarksLeftOut)
	}
	tl := tr.Timeline
	if tl == nil {
		if len(tr.Marks) > 0 {
			t.Fatalf("step %q: marks without a timeline", step)
		}
		return
	}
	n := tr.Buckets()
	switch {
	case !(tl.BucketMS > 0) || tl.BucketMS > maxBucketMS:
		t.Fatalf("step %q: bucket width %v", step, tl.BucketMS)
	case n < 1 || n > maxTimelineBuckets || len(tl.Series) > maxProbeKeys:
		t.Fatalf("step %q: %d buckets, %d series", step, n, len(tl.Series))
	}
	for k, s := range tl.Series {
		if len(s) != n {
			t.Fatalf("step %q: series %q has %d buckets, not %d", step, k, len(s), n)
		}
		for _, v := range s {
			if v < 0 || v > maxRepresents {
				t.Fatalf("step %q: series %q counts %d", step, k, v)
			}
		}
	}
	for _, m := range tr.Marks {
		if m.AtMS < 0 || m.AtMS > tr.SpanMS() {
			t.Fatalf("step %q: mark at %v ms outside the %v ms timeline", step, m.AtMS, tr.SpanMS())
		}
	}
}
