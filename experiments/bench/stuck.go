package bench

import (
	"context"
	"fmt"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/resources"
)

// stuckWindow is the HTTP/2 stream and connection window a stuck client advertises:
// grpc-go's own default (64 KiB, internal/transport/defaults.go defaultWindowSize). Set
// explicitly because that turns off BDP estimation (dialoptions.go
// WithInitialWindowSize sets StaticWindowSize; internal/transport/http2_client.go
// newHTTP2Client then leaves bdpEst nil), so the window cannot grow and a few unread
// responses fill it.
const stuckWindow = 64 << 10

// stuckClients are the --stuck-clients clients: each on its own connection (its own
// HTTP/2 connection window, as a separate Envoy would have), each asks for CDS and LDS
// like the fan-out clients and then never reads. The server's send to it blocks once the
// unread responses exceed the window; the question is whether anything else waits too.
type stuckClients struct {
	cancel context.CancelFunc
	conns  []*grpc.ClientConn
}

// startStuck opens k stuck streams to addr in mode.
func startStuck(ctx context.Context, addr, mode string, k int) (*stuckClients, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sc := &stuckClients{cancel: cancel}
	for i := 0; i < k; i++ {
		conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithInitialWindowSize(stuckWindow), grpc.WithInitialConnWindowSize(stuckWindow),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(controlplane.DefaultMaxSendMsgSize)))
		if err != nil {
			sc.stop()
			return nil, fmt.Errorf("stuck client: dial %s: %w", addr, err)
		}
		sc.conns = append(sc.conns, conn)
		if err := subscribeStuck(sctx, mode, conn); err != nil {
			sc.stop()
			return nil, err
		}
	}
	return sc, nil
}

// subscribeStuck opens the stream and sends the first requests; nothing reads it after.
func subscribeStuck(ctx context.Context, mode string, conn *grpc.ClientConn) error {
	sotw := func(ctx context.Context, c discovery.AggregatedDiscoveryServiceClient) error {
		s, err := c.StreamAggregatedResources(ctx)
		if err != nil {
			return fmt.Errorf("stuck client: open SotW stream: %w", err)
		}
		for _, r := range []*discovery.DiscoveryRequest{{Node: stuckNode(), TypeUrl: resources.CDS.URL()}, {TypeUrl: resources.LDS.URL()}} {
			if err := s.Send(r); err != nil {
				return fmt.Errorf("stuck client: send %s: %w", r.GetTypeUrl(), err)
			}
		}
		return nil
	}
	delta := func(ctx context.Context, c discovery.AggregatedDiscoveryServiceClient) error {
		s, err := c.DeltaAggregatedResources(ctx)
		if err != nil {
			return fmt.Errorf("stuck client: open delta stream: %w", err)
		}
		for _, r := range []*discovery.DeltaDiscoveryRequest{{Node: stuckNode(), TypeUrl: resources.CDS.URL()}, {TypeUrl: resources.LDS.URL()}} {
			if err := s.Send(r); err != nil {
				return fmt.Errorf("stuck client: send %s: %w", r.GetTypeUrl(), err)
			}
		}
		return nil
	}
	return simclient.RunMode(ctx, mode, discovery.NewAggregatedDiscoveryServiceClient(conn), sotw, delta)
}

// stuckNode is the node the fan-out clients name: the snapshot cache keys states by
// node ID (shared/frontend.NewSnapshotCache, IDHash), so the stuck client is served the
// same state as the others.
func stuckNode() *core.Node { return &core.Node{Id: resources.NodeID, Cluster: "bench-stuck"} }

// stop resets the stuck streams (which unblocks the server's sends) and closes the
// connections.
func (sc *stuckClients) stop() {
	sc.cancel()
	for _, c := range sc.conns {
		_ = c.Close()
	}
}
