package tap

import (
	"bytes"
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xds-workbench/lab/delta"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/render"
	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
	"github.com/xds-workbench/lab/sotw"
)

// wait bounds every wait on a condition.
const wait = 10 * time.Second

// waitEvent waits until some event of log satisfies ok and returns the first such.
func waitEvent(t *testing.T, log *xdslogtest.Log, what string, ok func(xdslog.Event) bool) xdslog.Event {
	t.Helper()
	ev := log.WaitFor(t, wait, what, func(ev []xdslog.Event) bool { return slices.ContainsFunc(ev, ok) })
	return ev[slices.IndexFunc(ev, ok)]
}

func kind(ev, typ, nonce string) func(xdslog.Event) bool {
	return func(e xdslog.Event) bool { return e.Event == ev && e.Type == typ && e.Nonce == nonce }
}

// upstream is the workbench's own control plane (publisher, cache, transport) on an
// in-memory listener, recording into its own log.
type upstream struct {
	lis *bufconntest.Listener
	srv *grpc.Server
	log *xdslogtest.Log
}

func startUpstream(t *testing.T, mode protocol.Mode) *upstream {
	t.Helper()
	// Version 2 carries an invalid route, which is still valid protobuf: the client
	// decides what to NACK.
	return serveUpstream(t, mode, resources.State{Version: "1", InventoryPort: 18080}, nil)
}

// serveUpstream publishes state and serves it in mode from the publisher's snapshot
// cache, or from what serveFrom wraps around it.
func serveUpstream(t *testing.T, mode protocol.Mode, state resources.State, serveFrom func(cachev3.Cache, *publish.Publisher) cachev3.Cache) *upstream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	u := &upstream{srv: grpc.NewServer(), log: &xdslogtest.Log{}}
	rec := xdslog.NewRecorder(u.log, mode)
	snapshots := publish.NewSnapshotCache(nil)
	var cache cachev3.Cache = snapshots
	pub, err := publish.NewPublisher(publish.PublisherConfig{Cache: snapshots, NodeID: resources.NodeID, Recorder: rec})
	require.NoError(t, err)
	set, err := resources.Build(state)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, set))
	if serveFrom != nil {
		cache = serveFrom(cache, pub)
	}
	var fe frontend.FrontEnd
	if mode == protocol.SotW {
		fe, err = sotw.New(ctx, sotw.Config{Cache: cache, Recorder: rec, Describe: pub.Describe})
	} else {
		fe, err = delta.New(ctx, delta.Config{Cache: cache, Recorder: rec, Describe: pub.Describe})
	}
	require.NoError(t, err)
	fe.Register(u.srv)
	u.lis = bufconntest.Serve(t, u.srv.Serve, u.srv.Stop)
	return u
}

// harness is a tap between an upstream reached through dial and a client on bufconn.
type harness struct {
	tap  *Tap
	lis  *bufconntest.Listener
	logs map[protocol.Mode]*xdslogtest.Log
}

func startTap(t *testing.T, dial func(ctx context.Context, addr string) (net.Conn, error)) *harness {
	t.Helper()
	return startTapWith(t, dial, nil)
}

// startTapWith is startTap with a hook the recording goroutine calls before each item.
func startTapWith(t *testing.T, dial func(ctx context.Context, addr string) (net.Conn, error), hook func()) *harness {
	t.Helper()
	h := &harness{logs: map[protocol.Mode]*xdslogtest.Log{protocol.SotW: {}, protocol.Delta: {}}}
	tp, err := New(Config{Upstream: "127.0.0.1:18000", Dialer: dial, recordHook: hook, Recorder: func(mode protocol.Mode) *xdslog.Recorder {
		r := xdslog.NewRecorder(h.logs[mode], mode, xdslog.WithTap("127.0.0.1:18000"))
		r.BeginSession()
		return r
	}})
	require.NoError(t, err)
	h.tap = tp
	h.lis = bufconntest.Serve(t, tp.Serve, tp.Stop)
	return h
}

// ads returns an ADS client of the tap and a context for its streams that ends with
// the test.
func (h *harness) ads(t *testing.T) (discovery.AggregatedDiscoveryServiceClient, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return discovery.NewAggregatedDiscoveryServiceClient(h.lis.Dial(t)), ctx
}

// firstCDS sends the stream's first request (the node, CDS) and returns the response.
func firstCDS(t *testing.T, s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient) *discovery.DiscoveryResponse {
	t.Helper()
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()}))
	cds, err := s.Recv()
	require.NoError(t, err)
	return cds
}

// ackCDS ACKs the CDS response r.
func ackCDS(t *testing.T, s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient, r *discovery.DiscoveryResponse) {
	t.Helper()
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: resources.CDS.URL(), VersionInfo: r.GetVersionInfo(), ResponseNonce: r.GetNonce()}))
}

var node = &core.Node{Id: resources.NodeID}

// exchanges filters a log to its sends, ACKs and NACKs, as the fields both recorders
// must agree on.
type exchange struct {
	Event, Type, Nonce, Version, SentVersion, Accepted, Error string
	Resources                                                 []string
}

func exchanges(ev []xdslog.Event) []exchange {
	var out []exchange
	for _, e := range ev {
		switch e.Event {
		case xdslog.EventSend, xdslog.EventAck, xdslog.EventNack:
		default:
			continue
		}
		x := exchange{Event: e.Event, Type: e.Type, Nonce: e.Nonce, Version: e.Version, SentVersion: e.SentVersion, Accepted: e.Accepted(), Error: e.Error}
		for _, r := range e.Resources {
			red := "?"
			if r.Redundant != nil {
				red = map[bool]string{true: "redundant", false: "new"}[*r.Redundant]
			}
			x.Resources = append(x.Resources, r.Name+"@"+r.Version+"#"+r.Hash+" "+red)
		}
		out = append(out, x)
	}
	return out
}

// TestSotWThroughTheTap: a SotW client behind the tap in front of the workbench's own
// control plane. What the client receives is what the server sent; the tap's log
// records the same sends, ACKs and NACKs as the server's own log (nonces, versions,
// names, hashes, redundancy); the node is on the first request; the header says tap.
func TestSotWThroughTheTap(t *testing.T) {
	up := startUpstream(t, protocol.SotW)
	h := startTap(t, up.lis.ContextDialer)
	ads, ctx := h.ads(t)
	s, err := ads.StreamAggregatedResources(ctx)
	require.NoError(t, err)

	cds := firstCDS(t, s)
	ackCDS(t, s, cds)
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: resources.LDS.URL()}))
	lds, err := s.Recv()
	require.NoError(t, err)
	// The client rejects LDS: a NACK carries its previous (empty) version.
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: resources.LDS.URL(), ResponseNonce: lds.GetNonce(),
		ErrorDetail: &status.Status{Code: int32(codes.InvalidArgument), Message: "listener rejected"}}))

	waitEvent(t, up.log, "the server's NACK", kind(xdslog.EventNack, "LDS", lds.GetNonce()))
	tapLog := h.logs[protocol.SotW]
	ack := waitEvent(t, tapLog, "the tap's ACK", kind(xdslog.EventAck, "CDS", cds.GetNonce()))
	assert.Equal(t, cds.GetVersionInfo(), ack.Accepted())
	nack := waitEvent(t, tapLog, "the tap's NACK", kind(xdslog.EventNack, "LDS", lds.GetNonce()))
	assert.Equal(t, "listener rejected", nack.Error)
	assert.Equal(t, lds.GetVersionInfo(), nack.SentVersion)

	ev := tapLog.Events(t)
	require.NotEmpty(t, ev)
	assert.Equal(t, xdslog.EventSession, ev[0].Event)
	assert.Equal(t, xdslog.SourceTap, ev[0].Source)
	assert.True(t, ev[0].NoPublish)
	assert.Equal(t, "127.0.0.1:18000", ev[0].Upstream)
	assert.Equal(t, xdslog.EventStreamOpen, ev[1].Event)
	for _, e := range ev {
		assert.NotEqual(t, xdslog.EventPublish, e.Event, "a tap sees no publishes")
	}
	first := waitEvent(t, tapLog, "the first request", func(e xdslog.Event) bool { return e.Event == xdslog.EventRequest })
	assert.Equal(t, resources.NodeID, first.Node)
	assert.Equal(t, xdslog.RequestWildcard, first.Kind)

	// The server re-sends the rejected LDS (the resend policy); up to the NACK both logs
	// must agree line by line.
	want := exchanges(up.log.Events(t))
	got := exchanges(ev)
	require.GreaterOrEqual(t, len(want), 4, "send CDS, ack, send LDS, nack")
	require.GreaterOrEqual(t, len(got), 4)
	assert.Equal(t, want[:4], got[:4])
	// Sends carry the bytes on the wire, as the server's proto.Size.
	for i, e := range ev {
		if e.Event == xdslog.EventSend {
			assert.Positive(t, e.Bytes, "event %d", i)
		}
	}
	// A request without the latest nonce is stale, for the tap as for the server.
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: resources.CDS.URL(), VersionInfo: cds.GetVersionInfo()}))
	stale := func(e xdslog.Event) bool { return e.Event == xdslog.EventStale && e.Type == "CDS" }
	waitEvent(t, up.log, "the server's stale", stale)
	assert.Equal(t, cds.GetNonce(), waitEvent(t, tapLog, "the tap's stale", stale).LatestNonce)

	sends := func(ev []xdslog.Event) (n []int) {
		for _, e := range ev {
			if e.Event == xdslog.EventSend {
				n = append(n, e.Bytes)
			}
		}
		return n
	}
	assert.Equal(t, sends(up.log.Events(t))[:2], sends(ev)[:2])
}

// TestDeltaThroughTheTap: the same for delta, with per-resource versions.
func TestDeltaThroughTheTap(t *testing.T) {
	up := startUpstream(t, protocol.Delta)
	h := startTap(t, up.lis.ContextDialer)
	ads, ctx := h.ads(t)
	s, err := ads.DeltaAggregatedResources(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()}))
	cds, err := s.Recv()
	require.NoError(t, err)
	require.NotEmpty(t, cds.GetResources())
	require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resources.CDS.URL(), ResponseNonce: cds.GetNonce()}))
	require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resources.EDS.URL(), ResourceNamesSubscribe: []string{"inventory"}}))
	eds, err := s.Recv()
	require.NoError(t, err)
	require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resources.EDS.URL(), ResponseNonce: eds.GetNonce(),
		ErrorDetail: &status.Status{Code: int32(codes.InvalidArgument), Message: "endpoints rejected"}}))

	waitEvent(t, up.log, "the server's NACK", kind(xdslog.EventNack, "EDS", eds.GetNonce()))
	tapLog := h.logs[protocol.Delta]
	waitEvent(t, tapLog, "the tap's ACK", kind(xdslog.EventAck, "CDS", cds.GetNonce()))
	waitEvent(t, tapLog, "the tap's NACK", kind(xdslog.EventNack, "EDS", eds.GetNonce()))
	want := exchanges(up.log.Events(t))
	require.Len(t, want, 4)
	assert.Equal(t, want, exchanges(tapLog.Events(t)))
	assert.Equal(t, cds.GetResources()[0].GetVersion(), waitEvent(t, tapLog, "send", kind(xdslog.EventSend, "CDS", cds.GetNonce())).Resources[0].Version)
	assert.Zero(t, len(h.logs[protocol.SotW].Bytes()), "no SotW stream, no SotW log")
}

// TestUpstreamGoesAwayAndComesBack: the server stops; the client's stream ends with the
// server's status, recorded on stream_close; a server on the same address again serves
// the client's next stream, a new stream in the log.
func TestUpstreamGoesAwayAndComesBack(t *testing.T) {
	var mu sync.Mutex
	up := startUpstream(t, protocol.SotW)
	h := startTap(t, func(ctx context.Context, _ string) (net.Conn, error) {
		mu.Lock()
		l := up.lis
		mu.Unlock()
		return l.DialContext(ctx)
	})
	ads, ctx := h.ads(t)
	s, err := ads.StreamAggregatedResources(ctx)
	require.NoError(t, err)
	firstCDS(t, s)

	up.srv.Stop()
	_, err = s.Recv()
	code := grpcstatus.Code(err)
	assert.Equal(t, codes.Unavailable, code, "the server's status: %v", err)
	tapLog := h.logs[protocol.SotW]
	closed := waitEvent(t, tapLog, "stream_close", func(e xdslog.Event) bool { return e.Event == xdslog.EventStreamClose })
	assert.Equal(t, int64(1), closed.Stream)
	assert.Contains(t, closed.Error, "upstream ended the stream: Unavailable")

	up2 := startUpstream(t, protocol.SotW)
	mu.Lock()
	up = up2
	mu.Unlock()
	// The client reconnects, as Envoy would after its backoff; the tap's upstream
	// connection redials too, so the first attempts may still see Unavailable.
	var cds *discovery.DiscoveryResponse
	require.Eventually(t, func() bool {
		s2, err := ads.StreamAggregatedResources(ctx)
		if err != nil {
			return false
		}
		if s2.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()}) != nil {
			return false
		}
		cds, err = s2.Recv()
		return err == nil
	}, wait, 10*time.Millisecond)
	// The new server's nonces start again at 1: the new stream tells them apart.
	send := waitEvent(t, tapLog, "the new stream's send", func(e xdslog.Event) bool {
		return kind(xdslog.EventSend, "CDS", cds.GetNonce())(e) && e.Stream != 1
	})
	opened := 0
	for _, e := range tapLog.Events(t) {
		if e.Event == xdslog.EventStreamOpen {
			opened++
			assert.LessOrEqual(t, e.Stream, send.Stream)
		}
	}
	assert.GreaterOrEqual(t, opened, 2, "a stream_open per stream")
	waitEvent(t, up2.log, "the new server's send", kind(xdslog.EventSend, "CDS", cds.GetNonce()))
}

// rawUpstream is a server that speaks bytes: it keeps what it receives and answers with
// the frames it is told to send, then ends the stream with end.
type rawUpstream struct {
	mu      sync.Mutex
	got     [][]byte
	streams int
	answer  [][]byte
	end     error
}

func (u *rawUpstream) serve(t *testing.T) *bufconntest.Listener {
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, s grpc.ServerStream) error {
		u.mu.Lock()
		u.streams++
		n := len(u.answer)
		u.mu.Unlock()
		for range n {
			var f frame
			if err := s.RecvMsg(&f); err != nil {
				return err
			}
			u.mu.Lock()
			u.got = append(u.got, f.data)
			u.mu.Unlock()
		}
		for _, a := range u.answer {
			if err := s.SendMsg(&frame{data: a}); err != nil {
				return err
			}
		}
		return u.end
	}))
	return bufconntest.Serve(t, srv.Serve, srv.Stop)
}

// TestBytesForwardedUnchanged: garbage and valid messages pass through the tap
// byte for byte both ways; what the tap cannot decode is recorded as undecodable; the
// upstream's status ends the client's stream.
func TestBytesForwardedUnchanged(t *testing.T) {
	valid, err := proto.Marshal(&discovery.DiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()})
	require.NoError(t, err)
	resp, err := proto.Marshal(&discovery.DiscoveryResponse{TypeUrl: resources.CDS.URL(), VersionInfo: "7", Nonce: "n1"})
	require.NoError(t, err)
	// Runtime (RTDS) is a type the workbench does not model (SDS it does).
	secret, err := proto.Marshal(&discovery.DiscoveryRequest{TypeUrl: "type.googleapis.com/envoy.service.runtime.v3.Runtime"})
	require.NoError(t, err)
	garbage := []byte{0xff, 0xff, 0xff, 0xff, 0x0f}
	u := &rawUpstream{answer: [][]byte{garbage, resp, valid}, end: grpcstatus.Error(codes.Unavailable, "server going away")}
	h := startTap(t, u.serve(t).ContextDialer)

	conn := h.lis.Dial(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, SotWMethod, grpc.ForceCodec(rawCodec{}))
	require.NoError(t, err)
	sent := [][]byte{valid, garbage, secret}
	for _, b := range sent {
		require.NoError(t, s.SendMsg(&frame{data: b}))
	}
	var got [][]byte
	for range u.answer {
		var f frame
		require.NoError(t, s.RecvMsg(&f))
		got = append(got, f.data)
	}
	assert.Equal(t, u.answer, got, "responses byte for byte")
	var f frame
	err = s.RecvMsg(&f)
	assert.Equal(t, codes.Unavailable, grpcstatus.Code(err))
	assert.Equal(t, "server going away", grpcstatus.Convert(err).Message())
	u.mu.Lock()
	assert.Equal(t, sent, u.got, "requests byte for byte")
	u.mu.Unlock()

	tapLog := h.logs[protocol.SotW]
	waitEvent(t, tapLog, "stream_close", func(e xdslog.Event) bool { return e.Event == xdslog.EventStreamClose })
	var und []xdslog.Event
	for _, e := range tapLog.Events(t) {
		if e.Event == xdslog.EventUndecodable {
			und = append(und, e)
		}
	}
	require.Len(t, und, 3, "a garbage request, a runtime request, a garbage response")
	assert.Equal(t, xdslog.KindRequest, und[0].Kind)
	assert.Contains(t, und[0].Error, "not a DiscoveryRequest")
	assert.Equal(t, len(garbage), und[0].Bytes)
	assert.Contains(t, und[1].Error, "Runtime")
	assert.Equal(t, xdslog.KindResponse, und[2].Kind)
	assert.Contains(t, und[2].Error, "not a DiscoveryResponse")
	closed := waitEvent(t, tapLog, "stream_close", func(e xdslog.Event) bool { return e.Event == xdslog.EventStreamClose })
	assert.Equal(t, "upstream ended the stream: Unavailable: server going away", closed.Error)
	waitEvent(t, tapLog, "the send", kind(xdslog.EventSend, "CDS", "n1"))
}

// TestNoUpstream: a stream the upstream cannot take ends with Unavailable, recorded.
func TestNoUpstream(t *testing.T) {
	h := startTap(t, func(context.Context, string) (net.Conn, error) { return nil, io.ErrClosedPipe })
	ads := discovery.NewAggregatedDiscoveryServiceClient(h.lis.Dial(t))
	s, err := ads.DeltaAggregatedResources(context.Background())
	require.NoError(t, err)
	_, err = s.Recv()
	assert.Equal(t, codes.Unavailable, grpcstatus.Code(err))
	closed := waitEvent(t, h.logs[protocol.Delta], "stream_close", func(e xdslog.Event) bool { return e.Event == xdslog.EventStreamClose })
	assert.Contains(t, closed.Error, "Unavailable")
}

// TestSteps: SetStep labels the following events of every recorder, and a recorder made
// later starts in the current step.
func TestSteps(t *testing.T) {
	h := startTap(t, func(context.Context, string) (net.Conn, error) { return nil, io.ErrClosedPipe })
	h.tap.SetStep("w1")
	ads := discovery.NewAggregatedDiscoveryServiceClient(h.lis.Dial(t))
	s, err := ads.StreamAggregatedResources(context.Background())
	require.NoError(t, err)
	_, _ = s.Recv()
	lg := h.logs[protocol.SotW]
	waitEvent(t, lg, "stream_close", func(e xdslog.Event) bool { return e.Event == xdslog.EventStreamClose })
	h.tap.SetStep("w2")
	ev := lg.Events(t)
	var steps []string
	for _, e := range ev {
		if e.Event == xdslog.EventStep {
			steps = append(steps, e.Step)
		}
	}
	assert.Equal(t, []string{"w1", "w2"}, steps)
	assert.Equal(t, "w1", ev[len(ev)-2].Step, "the stream_close")
}

func TestNewRefusesNonLoopback(t *testing.T) {
	_, err := New(Config{Upstream: "10.0.0.1:18000"})
	assert.ErrorContains(t, err, "not loopback")
	_, err = New(Config{})
	assert.ErrorContains(t, err, "no upstream")
	_, err = New(Config{Upstream: "127.0.0.1:18000", MaxRecvMsgSize: -1})
	assert.ErrorContains(t, err, "negative")
}

// TestCompareReadsTapLogs: a tap log (no publishes, undecodable events, a stream
// closed by the upstream) compares with itself in every format.
func TestCompareReadsTapLogs(t *testing.T) {
	resp, err := proto.Marshal(&discovery.DiscoveryResponse{TypeUrl: resources.CDS.URL(), VersionInfo: "7", Nonce: "n1"})
	require.NoError(t, err)
	first, err := proto.Marshal(&discovery.DiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()})
	require.NoError(t, err)
	u := &rawUpstream{answer: [][]byte{{0xff}, resp}, end: grpcstatus.Error(codes.Unavailable, "bye")}
	h := startTap(t, u.serve(t).ContextDialer)
	h.tap.SetStep("w1")
	s, err := h.lis.Dial(t).NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, SotWMethod, grpc.ForceCodec(rawCodec{}))
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(&frame{data: first}))
	require.NoError(t, s.SendMsg(&frame{data: []byte{0xff}}))
	for range 2 {
		var f frame
		require.NoError(t, s.RecvMsg(&f))
	}
	var f frame
	require.Error(t, s.RecvMsg(&f))
	lg := h.logs[protocol.SotW]
	waitEvent(t, lg, "stream_close", func(e xdslog.Event) bool { return e.Event == xdslog.EventStreamClose })
	data := lg.Bytes()

	a, _ := renderComparison(t, "A", data, "B", data)
	sends := 0
	for _, st := range a.Summary.Steps {
		sends += st.Total.Responses
	}
	assert.Equal(t, 1, sends, "the one decodable response")
}

// renderComparison reads two logs as runs and requires their comparison to render,
// non-empty, in every report format.
func renderComparison(t *testing.T, nameA string, logA []byte, nameB string, logB []byte) (a, b *compare.Run) {
	t.Helper()
	a, err := compare.FromLog(nameA, logA)
	require.NoError(t, err)
	b, err = compare.FromLog(nameB, logB)
	require.NoError(t, err)
	rep, err := compare.Compare(a, b, compare.Options{})
	require.NoError(t, err)
	for _, format := range render.Formats {
		var out bytes.Buffer
		require.NoError(t, render.Report(&out, rep, format, 0), format)
		assert.NotEmpty(t, out.String(), format)
	}
	return a, b
}

// TestMessageSizeLimits: a request over the tap's limit fails its stream with
// ResourceExhausted before it reaches the upstream.
func TestMessageSizeLimits(t *testing.T) {
	u := &rawUpstream{answer: [][]byte{{0x01}}}
	lis := u.serve(t)
	tp, err := New(Config{Upstream: "127.0.0.1:18000", Dialer: lis.ContextDialer, MaxRecvMsgSize: 64})
	require.NoError(t, err)
	conn := bufconntest.Serve(t, tp.Serve, tp.Stop).Dial(t)
	s, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, SotWMethod, grpc.ForceCodec(rawCodec{}))
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(&frame{data: bytes.Repeat([]byte{0x0a}, 100)}))
	var f frame
	err = s.RecvMsg(&f)
	assert.Equal(t, codes.ResourceExhausted, grpcstatus.Code(err), "%v", err)
	u.mu.Lock()
	assert.Empty(t, u.got, "nothing reached the upstream")
	u.mu.Unlock()
}

// startHeldTap opens a SotW stream through a tap whose recording goroutine waits before
// each item until gate is closed.
func startHeldTap(t *testing.T) (up *upstream, h *harness, s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient, gate chan struct{}) {
	t.Helper()
	up = startUpstream(t, protocol.SotW)
	gate = make(chan struct{})
	h = startTapWith(t, up.lis.ContextDialer, func() { <-gate })
	ads, ctx := h.ads(t)
	s, err := ads.StreamAggregatedResources(ctx)
	require.NoError(t, err)
	return up, h, s, gate
}

// TestRecordingOffTheForwardingPath: with the recording goroutine held (a recorder as
// slow as you like), frames are still forwarded both ways; once it is let go, the send
// and the ACK are stamped with when the tap saw them, not when they were recorded: the
// send before the client had the response, the ACK before the server had it, both
// before recording resumed, and the ACK latency is the difference of those two times.
func TestRecordingOffTheForwardingPath(t *testing.T) {
	up, h, s, gate := startHeldTap(t)

	// The response is forwarded while nothing is recorded yet.
	cds := firstCDS(t, s)
	received := time.Now()
	ackCDS(t, s, cds)
	waitEvent(t, up.log, "the server's ACK", kind(xdslog.EventAck, "CDS", cds.GetNonce()))
	acked := time.Now()
	tapLog := h.logs[protocol.SotW]
	for _, e := range tapLog.Events(t) {
		require.Equal(t, xdslog.EventSession, e.Event, "nothing but the session line is recorded while the recorder is held")
	}

	released := time.Now()
	close(gate)
	ack := waitEvent(t, tapLog, "the tap's ACK", kind(xdslog.EventAck, "CDS", cds.GetNonce()))
	send := waitEvent(t, tapLog, "the tap's send", kind(xdslog.EventSend, "CDS", cds.GetNonce()))
	assert.False(t, send.TS.After(received), "send stamped %s, after the client received it at %s", send.TS, received)
	assert.False(t, ack.TS.After(acked), "ACK stamped %s, after the server had it at %s", ack.TS, acked)
	assert.True(t, ack.TS.Before(released), "ACK stamped at recording time %s", ack.TS)
	require.NotNil(t, ack.LatencyMS)
	assert.Equal(t, float64(ack.TS.Sub(send.TS).Microseconds())/1000, *ack.LatencyMS, "ACK latency from the observed times")
	assert.Equal(t, exchanges(up.log.Events(t))[:2], exchanges(tapLog.Events(t))[:2])
}

// TestStopDrainsTheQueue: Stop returns only once everything queued is recorded, the
// stream_close included, even when recording is behind when Stop is called.
func TestStopDrainsTheQueue(t *testing.T) {
	up, h, s, gate := startHeldTap(t)
	cds := firstCDS(t, s)
	ackCDS(t, s, cds)
	waitEvent(t, up.log, "the server's ACK", kind(xdslog.EventAck, "CDS", cds.GetNonce()))

	stopped := make(chan struct{})
	go func() { h.tap.Stop(); close(stopped) }()
	// Let recording resume only once Stop has begun.
	require.Eventually(t, func() bool {
		h.tap.mu.Lock()
		defer h.tap.mu.Unlock()
		return h.tap.stopped
	}, wait, time.Millisecond)
	close(gate)
	select {
	case <-stopped:
	case <-time.After(wait):
		t.Fatal("Stop did not return")
	}
	var got []string
	for _, e := range h.logs[protocol.SotW].Events(t) {
		got = append(got, e.Event)
	}
	assert.Equal(t, []string{xdslog.EventSession, xdslog.EventStreamOpen, xdslog.EventRequest, xdslog.EventSend, xdslog.EventAck, xdslog.EventStreamClose}, got)
	ev := h.logs[protocol.SotW].Events(t)
	assert.Equal(t, "tap stopped", ev[len(ev)-1].Error)
}
