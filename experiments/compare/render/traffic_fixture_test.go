package render

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The load fixtures (testdata/load-sotw, testdata/load-delta) are what `lab run --load 200`
// writes, made by hand here rather than recorded, since a recording needs real Envoy and
// its figures would change with every run: three steps of the teaching scenario with a
// traffic event each, written as the runner writes it, at the end of its step.
//
//   - initial: 40 requests, all v1; the step's publish and ACKs precede the timeline
//     (it starts when the load does), so nothing is marked on it.
//   - port-change: the load moves from v1 to v2 after the publish (70 ms into the
//     timeline); SotW sends and ACKs all four types, delta only EDS; SotW has 3 503 NC;
//     delta's generator fell behind (157.5 of 200/s). A second publish and its ACK come
//     after the timeline's end: not marked.
//   - invalid-route: SotW's NACK storm, 12 NACKs (thin ticks), delta's one NACK; all v2.
//     SotW's answers disagree with the backends' logs (2 unlogged, 1 misattributed),
//     delta's generator overflowed 3 requests.
//
// TestLoadFixtures checks that the committed files are what loadFixture writes, and
// rewrites them with -update.
const (
	loadSotwRun  = "testdata/load-sotw"
	loadDeltaRun = "testdata/load-delta"
)

// fixtureStart is the fixtures' time zero.
var fixtureStart = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// logBuilder writes xds.log lines for one mode, each event at ms from fixtureStart in the
// current step.
type logBuilder struct {
	t     testing.TB
	mode  protocol.Mode
	step  string
	lines []byte
	nonce int
}

func (b *logBuilder) at(ms float64, e xdslog.Event) {
	b.t.Helper()
	e.TS = fixtureStart.Add(time.Duration(ms * float64(time.Millisecond)))
	e.Mode, e.Step = b.mode, b.step
	if e.Server == 0 {
		e.Server = 1
	}
	line, err := json.Marshal(e)
	require.NoError(b.t, err)
	b.lines = append(append(b.lines, line...), '\n')
}

func (b *logBuilder) startStep(ms float64, name string) {
	b.step = name
	b.at(ms, xdslog.Event{Event: xdslog.EventStep})
}

// send writes a send of typ at ms and returns its nonce.
func (b *logBuilder) send(ms float64, typ, version, name string) string {
	b.nonce++
	n := fmt.Sprint(b.nonce)
	b.at(ms, xdslog.Event{Event: xdslog.EventSend, Stream: 1, Type: typ, Version: version, Nonce: n, Bytes: 120,
		Resources: xdslog.Resources{{Name: name, Version: version, Hash: fmt.Sprintf("h-%s-%s", typ, version)}}})
	return n
}

func (b *logBuilder) ack(ms float64, typ, nonce, version string) {
	b.at(ms, xdslog.Event{Event: xdslog.EventAck, Stream: 1, Type: typ, Nonce: nonce, SentVersion: version, AcceptedVersion: &version})
}

func (b *logBuilder) nack(ms float64, typ, nonce, version, kept string, repeat int) {
	b.at(ms, xdslog.Event{Event: xdslog.EventNack, Stream: 1, Type: typ, Nonce: nonce, SentVersion: version, AcceptedVersion: &kept,
		Error: "route: path_specifier is required", Repeat: repeat})
}

func (b *logBuilder) probe(ms float64, id, backend string) {
	ok := true
	b.at(ms, xdslog.Event{Event: xdslog.EventDataPlane, RequestID: id, Status: 200, Backend: backend, Client: "envoy",
		Path: "/quote?sku=paper", Expected: "200 from " + backend, Correct: &ok, Probe: xdslog.ProbeRequest})
}

// traffic writes a step's traffic event: the timeline from startMS in 20 ms buckets, and
// the counts and rate it adds up to (of 200 requests/s asked).
func (b *logBuilder) traffic(ms, startMS float64, series map[string][]int, t xdslog.Traffic) {
	t.ByBackend, t.Failures = map[string]int{}, map[string]int{}
	for key, counts := range series {
		n := 0
		for _, c := range counts {
			n += c
		}
		t.Requests += n
		if key[0] >= '0' && key[0] <= '9' {
			t.Failures[key] += n
			continue
		}
		t.OK += n
		t.ByBackend[key] += n
	}
	buckets := 0
	for _, counts := range series {
		buckets = len(counts)
	}
	t.AskedRate, t.AchievedRate = 200, float64(t.Requests)/(float64(buckets)*0.020)
	// A rate says whether the load fell behind only over a second or more
	// (xdslog.Traffic.FellBehind); the fixture's short steps claim that length so that
	// its slow step is flagged.
	t.DurationMS = 1000
	t.Requests += t.Overflow
	t.Protocol, t.Connections = "http2", 4
	t.Timeline = &xdslog.Timeline{Start: fixtureStart.Add(time.Duration(startMS * float64(time.Millisecond))), BucketMS: 20, Series: series}
	b.at(ms, xdslog.Event{Event: xdslog.EventTraffic, Traffic: &t})
}

func repeatCount(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func msPtr(v float64) *float64 { return &v }

// loadFixture is the xds.log of a load run in mode; v2 names the second backend (a test
// gives it a name with HTML's special characters).
func loadFixture(t testing.TB, mode protocol.Mode, v2 string) []byte {
	b := &logBuilder{t: t, mode: mode}
	sotw := mode == protocol.SotW
	types := []struct{ typ, name string }{{"LDS", "quote-listener"}, {"RDS", "quote-route"}, {"CDS", "inventory"}, {"EDS", "inventory"}}

	b.startStep(0, "initial")
	b.at(5, xdslog.Event{Event: xdslog.EventPublish, Version: "1", Changed: []string{"CDS", "EDS", "LDS", "RDS"}})
	b.at(8, xdslog.Event{Event: xdslog.EventStreamOpen, Stream: 1})
	for i, ty := range types {
		n := b.send(10+float64(i), ty.typ, "1", ty.name)
		b.ack(15+float64(i), ty.typ, n, "1")
	}
	b.probe(40, "r-initial-1", "v1")
	b.traffic(260, 50, map[string][]int{"v1": repeatCount(4, 10)}, xdslog.Traffic{P50MS: 1.2, P99MS: 3.4, MaxMS: 5.1})

	b.startStep(300, "port-change")
	b.at(320, xdslog.Event{Event: xdslog.EventPublish, Version: "2", Changed: []string{"EDS"}})
	if sotw {
		for i, ty := range types {
			n := b.send(322+float64(i), ty.typ, "2", ty.name)
			b.ack(330+float64(i), ty.typ, n, "2")
		}
	} else {
		n := b.send(322, "EDS", "2", "inventory")
		b.ack(330, "EDS", n, "2")
	}
	b.probe(360, "r-port-change-1", v2)
	// After the timeline's end (250 + 20 × 20 = 650 ms): not marked.
	b.at(665, xdslog.Event{Event: xdslog.EventPublish, Version: "2.1", Changed: []string{"EDS"}})
	late := b.send(667, "EDS", "2.1", "inventory")
	b.ack(680, "EDS", late, "2.1")
	if sotw {
		v1 := append([]int{4, 4, 4, 4, 2, 1}, make([]int, 14)...)
		v2s := append([]int{0, 0, 0, 0, 1, 2, 3}, repeatCount(4, 13)...)
		nc := append([]int{0, 0, 0, 0, 1, 1, 1}, make([]int, 13)...)
		b.traffic(700, 250, map[string][]int{"v1": v1, v2: v2s, "503 NC": nc}, xdslog.Traffic{P50MS: 1.3, P99MS: 8.7, MaxMS: 12.5,
			Move: &xdslog.TrafficMove{From: "v1", To: v2, FirstOldMS: msPtr(0.4), LastOldMS: msPtr(38.2), AllNewMS: msPtr(60.1), OldAfter: 5}})
	} else {
		v1 := append([]int{4, 3, 4, 3, 2, 1}, make([]int, 14)...)
		v2s := append([]int{0, 0, 0, 0, 1, 2, 4}, repeatCount(3, 13)...)
		b.traffic(700, 250, map[string][]int{"v1": v1, v2: v2s}, xdslog.Traffic{P50MS: 1.1, P99MS: 4.2, MaxMS: 6.0,
			Move: &xdslog.TrafficMove{From: "v1", To: v2, FirstOldMS: msPtr(0.3), LastOldMS: msPtr(24.9), AllNewMS: msPtr(25.5), OldAfter: 2}})
	}

	b.startStep(750, "invalid-route")
	b.at(760, xdslog.Event{Event: xdslog.EventPublish, Version: "3", Changed: []string{"RDS"}})
	storm := 1
	if sotw {
		storm = 12
	}
	for k := range storm {
		n := b.send(762+5*float64(k), "RDS", "3", "quote-route")
		b.nack(765+5*float64(k), "RDS", n, "3", "2", k+1)
	}
	b.probe(900, "r-invalid-route-1", v2)
	tr := xdslog.Traffic{P50MS: 1.2, P99MS: 3.9, MaxMS: 7.7}
	if sotw {
		tr.Unlogged, tr.Misattributed = 2, 1
	} else {
		tr.Overflow = 3
	}
	b.traffic(1010, 700, map[string][]int{v2: repeatCount(4, 15)}, tr)
	return b.lines
}

// loadRunJSON is the fixtures' run.json: Envoy's run with --load 200.
func loadRunJSON(mode protocol.Mode) []byte {
	m := map[string]any{"mode": mode, "client": "envoy", "envoy_version": "1.40.0", "started": "2026-12-01T10:00:00Z",
		"steps": []string{"initial", "port-change", "invalid-route"}}
	if mode == protocol.SotW {
		m["sotw_versions"], m["nack_policy"] = "uniform", "resend"
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return append(b, '\n')
}

// TestLoadFixtures: the committed load fixtures are what loadFixture writes (with
// -update, it writes them).
func TestLoadFixtures(t *testing.T) {
	for _, fx := range []struct {
		dir  string
		mode protocol.Mode
	}{{loadSotwRun, protocol.SotW}, {loadDeltaRun, protocol.Delta}} {
		files := map[string][]byte{"xds.log": loadFixture(t, fx.mode, "v2"), "run.json": loadRunJSON(fx.mode), "envoy.result": []byte("PASS\n")}
		for name, want := range files {
			path := filepath.Join(fx.dir, name)
			if *update {
				require.NoError(t, os.MkdirAll(fx.dir, 0o755))
				require.NoError(t, os.WriteFile(path, want, 0o644))
				continue
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err, "missing fixture: go test ./experiments/compare -run TestLoadFixtures -update")
			require.Equal(t, string(want), string(got), "%s is not what loadFixture writes (regenerate with -update if intended)", path)
		}
	}
}
