package tap

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/gcpserver"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// sampleDirEnv, when set, makes TestGCPServerThroughTheTap write each mode's tap log
// to $LAB_GCP_SAMPLE_DIR/MODE/xds.log (how docs/samples/tap-20261201 was made).
const sampleDirEnv = "LAB_GCP_SAMPLE_DIR"

// gcpBinary builds go-control-plane's integration server once per test binary.
func gcpBinary(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := gcpserver.BuildOnce(ctx)
	require.NoError(t, err, "build the gcp integration server")
	return bin
}

// TestMain removes the built server.
func TestMain(m *testing.M) {
	code := m.Run()
	gcpserver.RemoveBuilt()
	os.Exit(code)
}

func gcpPort(t *testing.T) int {
	t.Helper()
	p, err := loopback.FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(p) })
	return p
}

// gcpRun is one mode's run: the server's options and the tap's log.
type gcpRun struct {
	opts gcpserver.Options
	log  []byte
}

// runGCPThroughTap runs go-control-plane's integration server in mode with the tap
// between it and real Envoy, checks that Envoy converged (the server's own verdict and
// the last snapshot in Envoy's config), then stops Envoy and the tap and returns the
// tap's log.
func runGCPThroughTap(t *testing.T, mode gcpserver.XDSFlag, mux bool) gcpRun {
	t.Helper()
	bin := envoytest.Require(t)
	serverBin := gcpBinary(t)
	const listeners = 3
	base, err := gcpserver.FreeBase(listeners)
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(base) })
	o := gcpserver.Options{
		Mode: mode, Mux: mux,
		Port: gcpPort(t), GatewayPort: gcpPort(t), ALSPort: gcpPort(t), UpstreamPort: gcpPort(t),
		BasePort: base, NodeID: "lab-gcp-" + string(mode),
		Updates: 2, Requests: 6, Delay: 250 * time.Millisecond,
		HTTPListeners: 1, ScopedHTTPListeners: 1, TCPListeners: 1, Clusters: 2,
	}
	up, err := gcpserver.StartUpstream(o.UpstreamPort, gcpserver.DefaultMessage)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, up.Close(), "upstream") })

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, err := gcpserver.Start(ctx, serverBin, o)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, srv.Stop(), "stop gcp server")
		if t.Failed() {
			t.Logf("gcp server output:\n%s", srv.Output())
		}
	})

	// The tap, on 127.0.0.1, its upstream the server.
	var logMu sync.Mutex
	var tapLog bytes.Buffer
	var modes []protocol.Mode // the protocols Envoy's streams used (the tap's goroutines)
	var recs []*xdslog.Recorder
	tp, err := New(Config{Upstream: srv.Addr(), Recorder: func(m protocol.Mode) *xdslog.Recorder {
		r := xdslog.NewRecorder(writerFunc(func(p []byte) (int, error) {
			logMu.Lock()
			defer logMu.Unlock()
			return tapLog.Write(p)
		}), m, xdslog.WithTap(srv.Addr()))
		r.BeginSession()
		logMu.Lock()
		modes = append(modes, m)
		recs = append(recs, r)
		logMu.Unlock()
		return r
	}})
	require.NoError(t, err)
	lis, err := net.Listen("tcp", loopback.Addr(0))
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- tp.Serve(lis) }()
	tapStopped := false
	stopTap := func() {
		if tapStopped {
			return
		}
		tapStopped = true
		tp.Stop()
		assert.NoError(t, <-served, "tap Serve")
	}
	t.Cleanup(stopTap)

	dir := t.TempDir()
	boot, err := gcpserver.Bootstrap(ctx, gcpserver.BootstrapConfig{Mode: mode, XDSAddr: lis.Addr().String(),
		ALSAddr: loopback.Addr(o.ALSPort), AdminPort: gcpPort(t), NodeID: o.NodeID})
	require.NoError(t, err)
	bootPath := filepath.Join(dir, "bootstrap.yaml")
	require.NoError(t, os.WriteFile(bootPath, boot, 0o644))
	envoyLog := filepath.Join(dir, "envoy.log")
	p, err := envoy.Start(ctx, envoy.Options{Binary: bin, ConfigPath: bootPath, LogPath: envoyLog,
		ExtraArgs: []string{"--concurrency", "1", "--drain-time-s", "1"}})
	require.NoError(t, err)
	envoyStopped := false
	stopEnvoy := func() {
		if envoyStopped {
			return
		}
		envoyStopped = true
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		assert.NoError(t, p.Stop(sctx), "stop envoy")
		if t.Failed() {
			if b, err := os.ReadFile(envoyLog); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				t.Logf("envoy log tail:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
	}
	t.Cleanup(stopEnvoy)

	// Convergence, as experiments/gcpserver's own Envoy test judges it: the server's
	// verdict (every snapshot had a batch in which every listener answered), and Envoy
	// holds the last snapshot's listeners and clusters with no rejected update.
	require.NoError(t, srv.WaitPassed(ctx), "the server's own verdict")
	batches := srv.Batches()
	assert.Len(t, batches, o.Updates*o.Requests, "request batches")
	assert.Equal(t, o.Updates, gcpserver.PassedUpdates(batches), "snapshots with a passing batch")
	dump, err := p.ConfigDump(ctx, false)
	require.NoError(t, err)
	for i := 0; i < o.Listeners(); i++ {
		assert.Contains(t, string(dump), fmt.Sprintf(`"listener-%d"`, i))
	}
	for i := 0; i < o.Clusters; i++ {
		assert.Contains(t, string(dump), fmt.Sprintf(`"cluster-v%d-%d"`, o.Updates-1, i), "the last snapshot's cluster")
	}
	for _, s := range []string{"cluster_manager.cds.update_success", "listener_manager.lds.update_success"} {
		n, err := p.StatInt(ctx, s)
		assert.NoError(t, err)
		assert.GreaterOrEqual(t, n, int64(o.Updates), s)
	}
	for _, s := range []string{"cluster_manager.cds.update_rejected", "listener_manager.lds.update_rejected"} {
		n, err := p.StatInt(ctx, s)
		assert.NoError(t, err)
		assert.Zero(t, n, s)
	}

	// The server has exited (its sequence is over); stop Envoy, then the tap, so every
	// stream's stream_close is in the log.
	stopEnvoy()
	stopTap()
	logMu.Lock()
	rs := recs
	logMu.Unlock()
	for _, r := range rs {
		r.Flush() // any condensed NACK storm (none expected)
	}
	logMu.Lock()
	data := append([]byte(nil), tapLog.Bytes()...)
	seen := modes
	logMu.Unlock()
	want := protocol.SotW
	if mode == gcpserver.ModeDeltaADS {
		want = protocol.Delta
	}
	assert.Equal(t, []protocol.Mode{want}, seen, "Envoy's streams are of the mode's protocol only")
	if d := os.Getenv(sampleDirEnv); d != "" {
		name := string(mode)
		if mux {
			name += "-mux"
		}
		require.NoError(t, os.MkdirAll(filepath.Join(d, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, name, "xds.log"), data, 0o644))
	}
	return gcpRun{opts: o, log: data}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// checkAnswered asserts, from the log's events, that every send was answered on its
// stream and type by an ACK or NACK of its nonce, or is among its stream's dropped
// sends; that every ACK and NACK answers a send; and that the recorder's dropped counts
// are exactly the unanswered sends. It returns the unanswered sends.
func checkAnswered(t *testing.T, events []xdslog.Event, nodeID string) []xdslog.Event {
	t.Helper()
	type key struct {
		stream     int64
		typ, nonce string
	}
	sends := map[key]xdslog.Event{}
	answered := map[key]bool{}
	dropped := map[int64]int{}
	nodes := map[int64]string{}
	for _, e := range events {
		k := key{e.Stream, e.Type, e.Nonce}
		switch e.Event {
		case xdslog.EventSend:
			_, dup := sends[k]
			assert.False(t, dup, "nonce %s sent twice on stream %d %s", e.Nonce, e.Stream, e.Type)
			sends[k] = e
		case xdslog.EventAck, xdslog.EventNack:
			_, ok := sends[k]
			assert.True(t, ok, "%s of nonce %s on stream %d %s answers no send before it", e.Event, e.Nonce, e.Stream, e.Type)
			assert.False(t, answered[k], "nonce %s answered twice", e.Nonce)
			answered[k] = true
		case xdslog.EventUnmatched:
			t.Errorf("unmatched request on stream %d %s: nonce %s", e.Stream, e.Type, e.Nonce)
		case xdslog.EventRequest:
			if e.Node != "" && nodes[e.Stream] == "" {
				nodes[e.Stream] = e.Node
			}
		case xdslog.EventStreamClose:
			if assert.NotNil(t, e.Dropped, "stream_close of stream %d has a dropped count", e.Stream) {
				dropped[e.Stream] = *e.Dropped
			}
		}
	}
	var unanswered []xdslog.Event
	perStream := map[int64]int{}
	for k, e := range sends {
		if !answered[k] {
			unanswered = append(unanswered, e)
			perStream[k.stream]++
		}
	}
	for s, n := range perStream {
		assert.Equal(t, n, dropped[s], "stream %d: unanswered sends vs its stream_close's dropped", s)
	}
	for s, n := range dropped {
		assert.Equal(t, perStream[s], n, "stream %d: dropped vs unanswered sends", s)
	}
	for s := range perStream {
		_, closed := dropped[s]
		assert.True(t, closed, "stream %d has unanswered sends and never closed", s)
	}
	streamsWithSends := map[int64]bool{}
	for k := range sends {
		streamsWithSends[k.stream] = true
	}
	for s := range streamsWithSends {
		assert.Equal(t, nodeID, nodes[s], "stream %d: the node ID recorded", s)
	}
	return unanswered
}

// TestGCPServerThroughTheTap puts the tap between real Envoy and go-control-plane's
// own integration server, in ADS and in DELTA-ADS mode. Envoy converges through the
// tap; every response the tap recorded is answered (ACK or NACK of its nonce on its
// stream and type) or counted dropped when its stream closed, and every answer
// correlates to a send; and lab compare of the ADS and DELTA-ADS logs renders every
// format with figures for both. ADS with -mux (EDS from a LinearCache) is checked the
// same way but not compared.
func TestGCPServerThroughTheTap(t *testing.T) {
	// Here, not only in each mode's envoytest.Require: the comparison after the modes
	// needs them all to have run.
	testenv.SkipIfShort(t, testenv.NeedsEnvoy)
	runs := map[string]gcpRun{}
	for _, tc := range []struct {
		name string
		mode gcpserver.XDSFlag
		mux  bool
	}{
		{"ads", gcpserver.ModeADS, false},
		{"delta-ads", gcpserver.ModeDeltaADS, false},
		{"ads-mux", gcpserver.ModeADS, true},
	} {
		name, mode := tc.name, tc.mode
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			r := runGCPThroughTap(t, mode, tc.mux)
			t.Logf("%s: %s", name, time.Since(start).Round(100*time.Millisecond))
			events, skipped, err := xdslog.Read(bytes.NewReader(r.log))
			require.NoError(t, err)
			assert.Zero(t, skipped.Skipped, "unreadable lines: %s", skipped.FirstSkip)
			unanswered := checkAnswered(t, events, r.opts.NodeID)
			for _, e := range unanswered {
				t.Logf("unanswered at close: stream %d %s nonce %s version %s", e.Stream, e.Type, e.Nonce, e.Version)
			}
			sum := analysis.Summarize(events)
			require.NotEmpty(t, sum.Steps)
			f := sum.Total
			assert.Positive(t, f.Responses, "responses")
			assert.Positive(t, f.Acks, "ACKs")
			assert.Zero(t, f.Nacks, "Envoy rejected nothing")
			assert.Zero(t, f.Unmatched, "unmatched")
			dropped := 0
			for _, st := range sum.Steps {
				dropped += st.Dropped
			}
			assert.Equal(t, len(unanswered), dropped, "the summary's dropped sends")
			assert.Equal(t, f.Responses, f.Acks+f.Nacks+dropped, "every response ACKed, NACKed or dropped at close")
			t.Logf("%s: responses %d resources %d redundant %d bytes %d acks %d dropped %d", name, f.Responses, f.Resources, f.Redundant, f.Bytes, f.Acks, dropped)
			runs[name] = r
		})
	}
	ads, delta := runs["ads"], runs["delta-ads"]
	if ads.log == nil || delta.log == nil {
		t.Fatal("a mode did not run")
	}
	a, b := renderComparison(t, "ads", ads.log, "delta-ads", delta.log)
	for i, run := range []*compare.Run{a, b} {
		assert.Positive(t, run.Summary.Total.Responses, "run %d responses", i)
		assert.Positive(t, run.Summary.Total.Acks, "run %d ACKs", i)
	}
}
