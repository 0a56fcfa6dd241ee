package frontend

import (
	"context"
	"net"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

// cdsAny is the first cluster of a built state, as a transport sends it, and the
// resource it is.
func cdsAny(t *testing.T) (*anypb.Any, resources.Resource) {
	t.Helper()
	set, err := resources.Build(resources.State{Version: "1", InventoryPort: 18080})
	require.NoError(t, err)
	r := set.ByType[resources.CDS].At(0)
	b, err := cachev3.MarshalResource(r.Resource)
	require.NoError(t, err)
	return &anypb.Any{TypeUrl: resources.CDS.URL(), Value: b}, r
}

func TestDescribeWire(t *testing.T) {
	t.Parallel()
	a, r := cdsAny(t)
	name, hash := DescribeWire(a)
	assert.Equal(t, r.Name, name)
	assert.Equal(t, r.Hash, hash, "the hash of the bytes sent is the publisher's content hash")
	name, _ = DescribeWire(&anypb.Any{TypeUrl: "type.googleapis.com/nope", Value: []byte{1}})
	assert.Equal(t, "?undecodable", name)
}

// A request of a type the workbench does not serve is refused with InvalidArgument and
// recorded; the other protocol's stream is refused with Unimplemented, naming the peer.
func TestRecordRefuses(t *testing.T) {
	t.Parallel()
	var log xdslogtest.Log
	r := NewRecord(xdslog.NewRecorder(&log, protocol.Delta), nil)
	secret := "type.googleapis.com/envoy.service.runtime.v3.Runtime" // RTDS: not modelled (SDS is)
	err := r.Delta(1, &discovery.DeltaDiscoveryRequest{TypeUrl: secret})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	_, _, err = r.SotW(2, &discovery.DiscoveryRequest{TypeUrl: secret})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))

	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4321}})
	err = r.Refuse(ctx, "SotW stream", "start Envoy with the bootstrap `lab bootstrap --mode delta` prints")
	assert.Equal(t, codes.Unimplemented, status.Code(err))

	ev := log.Events(t)
	require.Len(t, ev, 3)
	for _, e := range ev {
		assert.Equal(t, xdslog.EventRefused, e.Event)
	}
	assert.Equal(t, int64(1), ev[0].Stream)
	assert.Contains(t, ev[0].Error, "Runtime")
	assert.Equal(t, int64(2), ev[1].Stream)
	assert.Equal(t, "127.0.0.1:4321", ev[2].Peer)
	assert.Contains(t, ev[2].Error, "SotW stream refused")
}

// A SotW stream as the library's callbacks report it: opened, a request, the response
// named and hashed by the DescribeFunc given, the ACK classified, closed.
func TestRecordSotW(t *testing.T) {
	t.Parallel()
	var log xdslogtest.Log
	r := NewRecord(xdslog.NewRecorder(&log, protocol.SotW), func(a *anypb.Any) (string, string) { return "named-by-describe", "h" })
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1234}})
	require.NoError(t, r.Open(ctx, 7, ""))
	node := &core.Node{Id: "envoy-1"}
	req := &discovery.DiscoveryRequest{TypeUrl: resources.CDS.URL(), Node: node}
	typ, e, err := r.SotW(7, req)
	require.NoError(t, err)
	assert.Equal(t, resources.CDS, typ)
	assert.Empty(t, e.Event, "the first request answers no send")
	a, _ := cdsAny(t)
	resp := &discovery.DiscoveryResponse{TypeUrl: resources.CDS.URL(), VersionInfo: "v1", Nonce: "n1", Resources: []*anypb.Any{a}}
	r.SotWResponse(ctx, 7, req, resp)
	_, e, err = r.SotW(7, &discovery.DiscoveryRequest{TypeUrl: resources.CDS.URL(), VersionInfo: "v1", ResponseNonce: "n1"})
	require.NoError(t, err)
	assert.Equal(t, xdslog.EventAck, e.Event, "the event returned is the recorder's classification")
	r.Close(7, node)

	ev := log.Events(t)
	require.Equal(t, 1, xdslogtest.Count(ev, xdslog.EventStreamOpen))
	assert.Equal(t, "127.0.0.1:1234", ev[0].Peer)
	sends := xdslogtest.Select(ev, "", xdslog.EventSend, "")
	require.Len(t, sends, 1)
	assert.Equal(t, "CDS", sends[0].Type)
	assert.Equal(t, proto.Size(resp), sends[0].Bytes)
	assert.Equal(t, xdslog.Resources{{Name: "named-by-describe", Version: "v1", Hash: "h", Redundant: new(false)}}, sends[0].Resources)
	assert.Equal(t, 1, xdslogtest.Count(ev, xdslog.EventAck))
	assert.Equal(t, 1, xdslogtest.Count(ev, xdslog.EventStreamClose))
}

// A delta response is recorded with the names and versions on the wire, the content
// hashed by DescribeWire when no DescribeFunc is given, a bodiless resource as not found
// and the removed names.
func TestRecordDelta(t *testing.T) {
	t.Parallel()
	var log xdslogtest.Log
	r := NewRecord(xdslog.NewRecorder(&log, protocol.Delta), nil)
	require.NoError(t, r.Open(context.Background(), 3, ""))
	req := &discovery.DeltaDiscoveryRequest{TypeUrl: resources.CDS.URL(), ResourceNamesSubscribe: []string{"*"}}
	require.NoError(t, r.Delta(3, req))
	a, res := cdsAny(t)
	resp := &discovery.DeltaDiscoveryResponse{TypeUrl: resources.CDS.URL(), SystemVersionInfo: "1", Nonce: "n1",
		Resources:        []*discovery.Resource{{Name: res.Name, Version: "wire-v", Resource: a}, {Name: "gone-host"}},
		RemovedResources: []string{"old"}}
	r.DeltaResponse(3, req, resp)
	r.Close(3, nil)

	sends := xdslogtest.Select(log.Events(t), "", xdslog.EventSend, "")
	require.Len(t, sends, 1)
	assert.Equal(t, xdslog.Resources{{Name: res.Name, Version: "wire-v", Hash: res.Hash, Redundant: new(false)}, {Name: "gone-host", NotFound: true}}, sends[0].Resources)
	assert.Equal(t, []string{"old"}, sends[0].Removed)
	assert.Equal(t, proto.Size(resp), sends[0].Bytes)
}

// Without a recorder nothing is recorded, and the type check still refuses.
func TestRecordWithoutRecorder(t *testing.T) {
	t.Parallel()
	r := NewRecord(nil, nil)
	require.NoError(t, r.Open(context.Background(), 1, ""))
	typ, e, err := r.SotW(1, &discovery.DiscoveryRequest{TypeUrl: resources.EDS.URL()})
	require.NoError(t, err)
	assert.Equal(t, resources.EDS, typ)
	assert.Zero(t, e)
	assert.Error(t, r.Delta(1, &discovery.DeltaDiscoveryRequest{TypeUrl: "nope"}))
	r.SotWResponse(context.Background(), 1, nil, &discovery.DiscoveryResponse{TypeUrl: resources.EDS.URL()})
	r.Close(1, nil)
}
