package tap

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare/render"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/shared/loopback/loopbacktest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/syncbuf"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// tapRun is Run (lab tap) running in front of the workbench's control plane (SotW), with
// its own log and the control plane's beside it.
type tapRun struct {
	addr, tapLog, cpLog string
	cp                  *controlplane.ControlPlane
	steps               *io.PipeWriter
	out                 *syncbuf.Buffer
	stop                func() error
}

func startTapRun(t *testing.T, mode protocol.Mode) *tapRun { return startTapRunOn(t, mode, 0) }

// startTapRunOn is startTapRun with Envoy's listener on listenerPort (0: the default).
func startTapRunOn(t *testing.T, mode protocol.Mode, listenerPort int) *tapRun {
	t.Helper()
	dir := t.TempDir()
	r := &tapRun{tapLog: filepath.Join(dir, "tap.log"), cpLog: filepath.Join(dir, "cp.log"), out: &syncbuf.Buffer{}}
	cpFile, err := os.Create(r.cpLog)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cpFile.Close() })
	rec := xdslog.NewRecorder(cpFile, mode)
	rec.BeginSession()
	rec.SetStep("exchange")
	rec.Emit(xdslog.Event{Event: xdslog.EventStep})
	ctx, cancel := context.WithCancel(context.Background())
	cp, err := controlplane.Start(ctx, controlplane.Options{Mode: mode, Addr: "127.0.0.1:0", Recorder: rec})
	require.NoError(t, err)
	_, err = cp.Publish(ctx, resources.State{Version: "1", InventoryPort: 18080, ListenerPort: listenerPort})
	require.NoError(t, err)
	r.cp = cp

	o := DefaultOptions()
	o.Listen, o.Upstream, o.LogPath = "127.0.0.1:0", cp.Addr(), r.tapLog
	ready := make(chan string, 1)
	o.Ready = func(addr string) { ready <- addr }
	in, steps := io.Pipe()
	r.steps = steps
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, in, r.out, r.out) }()
	select {
	case r.addr = <-ready:
	case err := <-done:
		t.Fatalf("lab tap ended: %v", err)
	}
	stopped := false
	r.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		err := <-done
		cp.Stop()
		return err
	}
	t.Cleanup(func() { _ = r.stop() })
	return r
}

func readLog(t *testing.T, path string) []xdslog.Event {
	t.Helper()
	ev, _, err := xdslog.ReadFile(path)
	require.NoError(t, err)
	return ev
}

func waitLog(t *testing.T, path, what string, ok func(xdslog.Event) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		ev, _, err := xdslog.ReadFile(path)
		if err != nil {
			return false
		}
		for _, e := range ev {
			if ok(e) {
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "waiting for %s", what)
}

// TestRunRecordsAndCompares: lab tap in front of lab serve's control plane; a client's
// ACK and NACK are in the tap's log as in the control plane's, with the step from stdin;
// lab compare renders every format of the tap log beside the control plane's log with
// the same ACK and NACK counts.
func TestRunRecordsAndCompares(t *testing.T) {
	r := startTapRun(t, protocol.SotW)
	_, err := io.WriteString(r.steps, "exchange\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(r.out.String(), "step exchange\n") }, 10*time.Second, 5*time.Millisecond)

	conn, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{Node: &core.Node{Id: resources.NodeID}, TypeUrl: resources.CDS.URL()}))
	cds, err := s.Recv()
	require.NoError(t, err)
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: resources.CDS.URL(), VersionInfo: cds.GetVersionInfo(), ResponseNonce: cds.GetNonce()}))
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: resources.LDS.URL()}))
	lds, err := s.Recv()
	require.NoError(t, err)
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: resources.LDS.URL(), ResponseNonce: lds.GetNonce(),
		ErrorDetail: &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: "rejected"}}))
	for _, path := range []string{r.tapLog, r.cpLog} {
		waitLog(t, path, "the NACK", func(e xdslog.Event) bool { return e.Event == xdslog.EventNack && e.Nonce == lds.GetNonce() })
	}
	cancel()
	require.NoError(t, r.stop())
	assert.Contains(t, r.out.String(), "tapping ADS on "+r.addr+" -> "+r.cp.Addr())

	ev := readLog(t, r.tapLog)
	assert.Equal(t, xdslog.SourceTap, ev[0].Source)
	assert.True(t, ev[0].NoPublish)
	last := ev[len(ev)-1]
	assert.Equal(t, xdslog.EventStreamClose, last.Event, "the stream_close is written before the log closes")
	sum := analysis.Summarize(ev)
	step := stepNamed(t, sum, "exchange")
	assert.Equal(t, 1, step.Total.Acks)
	assert.GreaterOrEqual(t, step.Total.Nacks, 1)
	cpStep := stepNamed(t, analysis.Summarize(readLog(t, r.cpLog)), "exchange")
	assert.Equal(t, cpStep.Types["CDS"].Acks, step.Types["CDS"].Acks)
	assert.Equal(t, 1, step.Types["LDS"].Nacks)

	for _, pair := range [][]string{{r.tapLog, r.cpLog}, {r.tapLog, r.tapLog}} {
		for _, format := range []string{"text", "markdown", "json", "html"} {
			var out, errOut syncbuf.Buffer
			require.NoError(t, render.Write(render.Request{Runs: pair, Format: format, Stdout: &out, Stderr: &errOut}), "%s %v", format, pair)
			assert.NotEmpty(t, out.String(), format)
			if format == "json" {
				var v any
				require.NoError(t, json.Unmarshal([]byte(out.String()), &v))
				assert.Positive(t, sumKey(v, "nacks"), "the JSON report counts the NACK")
				assert.Positive(t, sumKey(v, "acks"), "and the ACK")
			}
		}
	}
}

// TestRunAppendsASession: a second tap on the same log starts a new session, which lab
// compare tells apart.
func TestRunAppendsASession(t *testing.T) {
	r := startTapRun(t, protocol.SotW)
	conn, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	s, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(context.Background())
	require.NoError(t, err)
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{Node: &core.Node{Id: resources.NodeID}, TypeUrl: resources.CDS.URL()}))
	_, err = s.Recv()
	require.NoError(t, err)
	require.NoError(t, r.stop())

	// The tap restarts on the same log, in front of the same upstream address.
	o := DefaultOptions()
	o.Listen, o.Upstream, o.LogPath = "127.0.0.1:0", loopbacktest.ClosedAddr(t), r.tapLog
	cpFile, err := os.OpenFile(r.cpLog, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	defer cpFile.Close()
	cp, err := controlplane.Start(context.Background(), controlplane.Options{Mode: protocol.SotW, Addr: "127.0.0.1:0", Recorder: xdslog.NewRecorder(cpFile, protocol.SotW)})
	require.NoError(t, err)
	defer cp.Stop()
	_, err = cp.Publish(context.Background(), resources.State{Version: "1", InventoryPort: 18080})
	require.NoError(t, err)
	o.Upstream = cp.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	o.Ready = func(addr string) { ready <- addr }
	out := &syncbuf.Buffer{}
	done := make(chan error, 1)
	// Stdin stays open: its end would stop the tap before the stream below.
	in, inW := io.Pipe()
	defer inW.Close()
	go func() { done <- Run(ctx, o, in, out, out) }()
	addr := <-ready
	conn2, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn2.Close()
	s2, err := discovery.NewAggregatedDiscoveryServiceClient(conn2).StreamAggregatedResources(context.Background())
	require.NoError(t, err)
	require.NoError(t, s2.Send(&discovery.DiscoveryRequest{Node: &core.Node{Id: resources.NodeID}, TypeUrl: resources.CDS.URL()}))
	_, err = s2.Recv()
	require.NoError(t, err)
	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, out.String(), "appends a new session")

	sessions := xdslog.Sessions(readLog(t, r.tapLog))
	require.Len(t, sessions, 2)
	for _, s := range sessions {
		assert.Equal(t, xdslog.SourceTap, s[0].Source)
	}
	var cout, cerr syncbuf.Buffer
	err = render.Write(render.Request{Runs: []string{r.tapLog, r.cpLog}, Format: "text", Stdout: &cout, Stderr: &cerr})
	assert.ErrorContains(t, err, "holds 2 sessions")
}

func stepNamed(t *testing.T, sum *analysis.Summary, name string) *analysis.Step {
	t.Helper()
	for _, s := range sum.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %q in %v", name, sum.Steps)
	return nil
}

// sumKey adds up every number under key anywhere in a decoded JSON value.
func sumKey(v any, key string) float64 {
	var n float64
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if f, ok := x.(float64); ok && k == key {
				n += f
			} else {
				n += sumKey(x, key)
			}
		}
	case []any:
		for _, x := range v {
			n += sumKey(x, key)
		}
	}
	return n
}

func TestSecondLogPath(t *testing.T) {
	assert.Equal(t, "dir/xds.delta.log", SecondLogPath("dir/xds.log", "delta"))
	assert.Equal(t, "tap.sotw", SecondLogPath("tap", "sotw"))
}

// stepRecorder keeps the steps set.
type stepRecorder struct {
	mu    sync.Mutex
	steps []string
}

func (s *stepRecorder) SetStep(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, name)
}

func (s *stepRecorder) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.steps...)
}

// TestWindows: w1 at once, then one step per tick, until the context ends.
func TestWindows(t *testing.T) {
	ticks := make(chan time.Time)
	rec := &stepRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); windows(ctx, rec, ticks) }()
	ticks <- time.Time{}
	ticks <- time.Time{}
	cancel()
	<-done
	assert.Equal(t, []string{"w1", "w2", "w3"}, rec.got())
}

// TestRunSecondProtocol: a delta stream after a SotW one is recorded beside the log, and
// the SotW control plane's refusal reaches the client as its status.
func TestRunSecondProtocol(t *testing.T) {
	r := startTapRun(t, protocol.SotW)
	conn, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ads := discovery.NewAggregatedDiscoveryServiceClient(conn)
	s, err := ads.StreamAggregatedResources(context.Background())
	require.NoError(t, err)
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{Node: &core.Node{Id: resources.NodeID}, TypeUrl: resources.CDS.URL()}))
	_, err = s.Recv()
	require.NoError(t, err)
	d, err := ads.DeltaAggregatedResources(context.Background())
	require.NoError(t, err)
	_, err = d.Recv()
	assert.Equal(t, codes.Unimplemented, status.Code(err), "the upstream's refusal: %v", err)
	require.NoError(t, r.stop())
	assert.Contains(t, r.out.String(), "a delta stream: recorded in "+SecondLogPath(r.tapLog, "delta"))
	for _, e := range readLog(t, r.tapLog) {
		assert.Equal(t, protocol.SotW, e.Mode)
	}
	ev := readLog(t, SecondLogPath(r.tapLog, "delta"))
	require.Len(t, ev, 3, "session, stream_open, stream_close")
	assert.Equal(t, xdslog.SourceTap, ev[0].Source)
	assert.Equal(t, protocol.Delta, ev[2].Mode)
	assert.Contains(t, ev[2].Error, "upstream ended the stream: Unimplemented")
}
