package controlplane

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// BenchmarkFloor is one endpoint change (cluster 0's endpoint moves) on the indexed
// cache at N = 10 and N = 10,000, layer by layer, so that a per-change cost that grows
// with N shows in `go test -bench` without Envoy (docs/performance.md, "The floor"):
//
//   - publish: build the state from the current one, hand the cache the change and
//     record the publish, with no client (frontend.IndexedPublisher.Publish);
//   - serve: publish, then the cache answers the open EDS watch, the library's server
//     sends it through the recording stream, and a raw ADS client subscribed to all N
//     assignments receives it and ACKs; the ACK's new watch is opened before the next
//     change (per change: everything but a client's own work);
//   - recorder: the recorder's part alone, one response of one resource and its ACK on a
//     stream that holds N (xdslog.Recorder.Send, Feedback).
//
// The cache's notify alone is indexcache.BenchmarkEndpointChange.
func BenchmarkFloor(b *testing.B) {
	for _, mode := range []protocol.Mode{protocol.Delta, protocol.SotW} {
		for _, n := range []int{10, 10_000} {
			name := fmt.Sprintf("%s/N=%d", mode, n)
			b.Run("publish/"+name, func(b *testing.B) { benchPublish(b, mode, n) })
			b.Run("serve/"+name, func(b *testing.B) { benchServe(b, mode, n) })
			b.Run("recorder/"+name, func(b *testing.B) { benchRecorder(b, mode, n) })
		}
	}
}

func floorState(n, i int) resources.State {
	return resources.State{Version: strconv.Itoa(i), InventoryPort: 18080, Clusters: n, EndpointPorts: map[int]int{0: 18081 + i%2}}
}

func floorPlane(b *testing.B, mode protocol.Mode, n int) *ControlPlane {
	o := Options{Mode: mode, Cache: publish.IndexedCache, Recorder: xdslog.NewRecorder(io.Discard, mode)}
	if mode == protocol.SotW {
		o.Versions = publish.PerType
	}
	cp, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cp.Stop)
	if _, err := cp.Publish(context.Background(), floorState(n, 0)); err != nil {
		b.Fatal(err)
	}
	return cp
}

func benchPublish(b *testing.B, mode protocol.Mode, n int) {
	cp := floorPlane(b, mode, n)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := cp.Publish(context.Background(), floorState(n, i)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchServe(b *testing.B, mode protocol.Mode, n int) {
	cp := floorPlane(b, mode, n)
	lis := bufconntest.Listen()
	go func() { _ = cp.Serve(lis) }()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	s, err := open(ctx, lis.Dial(b), mode)
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = resources.ScaledClusterName(i)
	}
	c := &edsClient{s: s, node: &core.Node{Id: resources.NodeID}}
	if got := c.subscribe(b, names); got != n {
		b.Fatalf("initial EDS response with %d assignments, want %d", got, n)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := cp.Publish(ctx, floorState(n, i)); err != nil {
			b.Fatal(err)
		}
		if got := c.recvAndAck(b); got != 1 {
			b.Fatalf("change %d: EDS response with %d assignments, want 1", i, got)
		}
	}
}

// edsClient is a raw ADS client of EDS alone: the indexed cache answers a type as soon
// as it is asked, so no CDS is needed first.
type edsClient struct {
	s     *adsStream
	node  *core.Node
	names []string
}

func (c *edsClient) subscribe(b *testing.B, names []string) int {
	c.names = names
	var err error
	if c.s.mode == protocol.SotW {
		err = c.s.sotw.Send(&discovery.DiscoveryRequest{Node: c.node, TypeUrl: rsrc.EndpointType, ResourceNames: names})
	} else {
		err = c.s.delta.Send(&discovery.DeltaDiscoveryRequest{Node: c.node, TypeUrl: rsrc.EndpointType, ResourceNamesSubscribe: names})
	}
	if err != nil {
		b.Fatal(err)
	}
	return c.recvAndAck(b)
}

// recvAndAck receives one EDS response and ACKs it (SotW: repeating every name, as the
// protocol asks), returning how many assignments it carried.
func (c *edsClient) recvAndAck(b *testing.B) int {
	if c.s.mode == protocol.SotW {
		r, err := c.s.sotw.Recv()
		if err != nil {
			b.Fatal(err)
		}
		ack := &discovery.DiscoveryRequest{TypeUrl: rsrc.EndpointType, VersionInfo: r.GetVersionInfo(), ResponseNonce: r.GetNonce(), ResourceNames: c.names}
		if err := c.s.sotw.Send(ack); err != nil {
			b.Fatal(err)
		}
		return len(r.GetResources())
	}
	r, err := c.s.delta.Recv()
	if err != nil {
		b.Fatal(err)
	}
	if err := c.s.delta.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: rsrc.EndpointType, ResponseNonce: r.GetNonce()}); err != nil {
		b.Fatal(err)
	}
	return len(r.GetResources())
}

func benchRecorder(b *testing.B, mode protocol.Mode, n int) {
	rec := xdslog.NewRecorder(io.Discard, mode)
	all := make([]xdslog.Resource, n)
	for i := range all {
		all[i] = xdslog.Resource{Name: resources.ScaledClusterName(i), Version: "1", Hash: fmt.Sprintf("%064x", i)}
	}
	rec.StreamOpen(1, "bench")
	rec.Send(1, "EDS", "0", "1", all, nil, 113*n)
	rec.Feedback(1, "EDS", xdslog.Feedback{Nonce: "0", ClientVersion: "1"})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		nonce, version := strconv.Itoa(i), strconv.Itoa(i+1)
		one := []xdslog.Resource{{Name: all[0].Name, Version: version, Hash: fmt.Sprintf("%064x", n+i)}}
		rec.Send(1, "EDS", nonce, version, one, nil, 113)
		if e := rec.Feedback(1, "EDS", xdslog.Feedback{Nonce: nonce, ClientVersion: version}); e.Event != xdslog.EventAck {
			b.Fatalf("feedback recorded %q, want ack", e.Event)
		}
	}
}
