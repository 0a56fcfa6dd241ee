package delta

import (
	"context"
	"slices"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/publish/publishtest"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

// deadline bounds every wait; the machine may be slow, so it is generous.
const deadline = 20 * time.Second

// rig is a delta transport on a snapshot cache fed by a publisher, served over bufconn,
// recording into an xds.log in memory.
type rig struct {
	t   *testing.T
	ctx context.Context
	log *xdslogtest.Log
	rec *xdslog.Recorder
	pub *publish.Publisher
	lis *bufconntest.Listener
}

func newRig(t *testing.T) *rig {
	t.Helper()
	// First, so that its check runs after every cleanup registered below.
	testenv.VerifyNoLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{t: t, ctx: ctx, log: &xdslogtest.Log{}}
	r.rec = xdslog.NewRecorder(r.log, protocol.Delta)
	sc := publish.NewSnapshotCache(nil)
	pub, err := publish.NewPublisher(publish.PublisherConfig{Cache: sc, Recorder: r.rec})
	require.NoError(t, err)
	r.pub = pub
	fe, err := New(ctx, Config{Cache: sc, Recorder: r.rec, Describe: pub.Describe})
	require.NoError(t, err)
	r.lis = bufconntest.ServeGRPC(t, fe.Register)
	t.Cleanup(cancel)
	return r
}

// publish builds and publishes s under the step label.
func (r *rig) publish(step string, s resources.State) *resources.Set {
	r.t.Helper()
	r.rec.SetStep(step)
	return publishtest.Publish(r.t, r.pub, s)
}

// client is an ADS client on its own connection, its streams ending with the test.
func (r *rig) client() (discovery.AggregatedDiscoveryServiceClient, context.Context) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, deadline)
	r.t.Cleanup(cancel)
	return discovery.NewAggregatedDiscoveryServiceClient(r.lis.Dial(r.t)), ctx
}

// stream is a raw delta ADS stream, spoken the way a client speaks it.
type stream struct {
	t *testing.T
	s discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
}

func (r *rig) open() *stream {
	r.t.Helper()
	ads, ctx := r.client()
	s, err := ads.DeltaAggregatedResources(ctx)
	require.NoError(r.t, err)
	return &stream{t: r.t, s: s}
}

func (s *stream) send(req *discovery.DeltaDiscoveryRequest) {
	s.t.Helper()
	require.NoError(s.t, s.s.Send(req))
}

// recv returns the next response, which must be of type typ.
func (s *stream) recv(typ resources.Type) *discovery.DeltaDiscoveryResponse {
	s.t.Helper()
	resp, err := s.s.Recv()
	require.NoError(s.t, err)
	require.Equal(s.t, typ.URL(), resp.GetTypeUrl())
	require.NotEmpty(s.t, resp.GetNonce())
	return resp
}

// ack answers resp with its nonce; nack does with an error too.
func (s *stream) ack(resp *discovery.DeltaDiscoveryResponse) {
	s.t.Helper()
	s.send(&discovery.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce()})
}

func (s *stream) nack(resp *discovery.DeltaDiscoveryResponse, why string) {
	s.t.Helper()
	s.send(&discovery.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(),
		ErrorDetail: &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: why}})
}

var node = &core.Node{Id: resources.NodeID, Cluster: "test"}

// one returns the one event that keep selects, failing t when there is not exactly one.
func one(t *testing.T, ev []xdslog.Event, what string, keep func(xdslog.Event) bool) xdslog.Event {
	t.Helper()
	var got []xdslog.Event
	for _, e := range ev {
		if keep(e) {
			got = append(got, e)
		}
	}
	require.Len(t, got, 1, "exactly one %s", what)
	return got[0]
}

// is selects the events named event of type typ with nonce (any type, any nonce when
// empty).
func is(event, typ, nonce string) func(xdslog.Event) bool {
	return func(e xdslog.Event) bool {
		return e.Event == event && (typ == "" || e.Type == typ) && (nonce == "" || e.Nonce == nonce)
	}
}

// has waits until the log holds an event is(event, typ, nonce) selects.
func has(event, typ, nonce string) func([]xdslog.Event) bool {
	return func(ev []xdslog.Event) bool { return slices.ContainsFunc(ev, is(event, typ, nonce)) }
}

// wire is a delta response's resources as (name, version) pairs.
func wire(resp *discovery.DeltaDiscoveryResponse) [][2]string {
	var out [][2]string
	for _, r := range resp.GetResources() {
		out = append(out, [2]string{r.GetName(), r.GetVersion()})
	}
	return out
}

// published is what set holds of typ as (name, content hash) pairs: what a delta
// response of it carries as (name, version).
func published(set *resources.Set, typ resources.Type) [][2]string {
	var out [][2]string
	for _, r := range set.ByType[typ].All() {
		out = append(out, [2]string{r.Name, r.Hash})
	}
	return out
}

// recorded is a send event's resources as (name, version) pairs, checking that each is
// recorded with its content hash, which in delta is its version.
func recorded(t *testing.T, e xdslog.Event) [][2]string {
	t.Helper()
	var out [][2]string
	for _, r := range e.Resources {
		assert.Equal(t, r.Version, r.Hash, "%s: a delta resource's version is its content hash", r.Name)
		out = append(out, [2]string{r.Name, r.Version})
	}
	return out
}

func TestNewNeedsACache(t *testing.T) {
	_, err := New(context.Background(), Config{})
	require.EqualError(t, err, "delta: no cache to serve")
}

// TestRegistersTheADSService: Register puts both ADS methods on the server, the delta
// one to serve and the SotW one to refuse (TestRefusesSotW), so that a SotW client is
// told why rather than getting grpc's unknown method.
func TestRegistersTheADSService(t *testing.T) {
	fe, err := New(context.Background(), Config{Cache: publish.NewSnapshotCache(nil)})
	require.NoError(t, err)
	assert.Equal(t, protocol.Delta, fe.Mode())
	srv := grpc.NewServer()
	defer srv.Stop()
	fe.Register(srv)
	info, ok := srv.GetServiceInfo()["envoy.service.discovery.v3.AggregatedDiscoveryService"]
	require.True(t, ok, "the ADS service is registered: %v", srv.GetServiceInfo())
	var methods []string
	for _, m := range info.Methods {
		assert.True(t, m.IsClientStream && m.IsServerStream, "%s is a bidirectional stream", m.Name)
		methods = append(methods, m.Name)
	}
	slices.Sort(methods)
	assert.Equal(t, []string{"DeltaAggregatedResources", "StreamAggregatedResources"}, methods)
}

// TestRefusesSotW: a SotW stream ends with Unimplemented and a message that names the
// delta bootstrap; the refusal is recorded with the client's address, and the stream
// never reaches the library (no stream_open, request or send).
func TestRefusesSotW(t *testing.T) {
	r := newRig(t)
	r.publish("initial", resources.State{Version: "1", InventoryPort: 18080})
	ads, ctx := r.client()
	s, err := ads.StreamAggregatedResources(ctx)
	require.NoError(t, err)
	_ = s.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()})
	_, err = s.Recv()
	assert.Equal(t, codes.Unimplemented, status.Code(err), "error: %v", err)
	assert.Equal(t, RefusalMessage, status.Convert(err).Message())
	assert.Contains(t, RefusalMessage, "`lab bootstrap --mode delta`")
	assert.Contains(t, RefusalMessage, "api_type: DELTA_GRPC")

	ev := r.log.WaitFor(t, deadline, "the refusal", has(xdslog.EventRefused, "", ""))
	refused := one(t, ev, "refused", is(xdslog.EventRefused, "", ""))
	assert.Equal(t, "SotW stream refused: "+RefusalMessage, refused.Error)
	assert.Equal(t, "bufconn", refused.Peer, "the client's address")
	for _, event := range []string{xdslog.EventStreamOpen, xdslog.EventRequest, xdslog.EventSend} {
		assert.Zero(t, xdslogtest.Count(ev, event), "%s events", event)
	}
}

// TestRefusesAnUnknownType: a delta request for a type the workbench does not serve
// fails its stream with InvalidArgument, recorded as refused on that stream.
func TestRefusesAnUnknownType(t *testing.T) {
	r := newRig(t)
	r.publish("initial", resources.State{Version: "1", InventoryPort: 18080})
	s := r.open()
	const ecds = "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig" // ECDS: not served
	s.send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: ecds})
	_, err := s.s.Recv()
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "error: %v", err)
	assert.Contains(t, status.Convert(err).Message(), "unsupported type URL")

	ev := r.log.WaitFor(t, deadline, "the stream to close", has(xdslog.EventStreamClose, "", ""))
	open := one(t, ev, "stream_open", is(xdslog.EventStreamOpen, "", ""))
	refused := one(t, ev, "refused", is(xdslog.EventRefused, "", ""))
	assert.Equal(t, open.Stream, refused.Stream, "the refusal names its stream")
	assert.Contains(t, refused.Error, ecds)
	assert.Zero(t, xdslogtest.Count(ev, xdslog.EventRequest), "nothing recorded as a request")
}
