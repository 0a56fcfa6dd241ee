package adsfuzz

import (
	"context"
	"fmt"
	"strings"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"

	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Witness opens a stream on conn (for the life of ctx) that asks for CDS, waits for the
// answer, then sends nothing more: whatever a fuzzed stream does must add no event to
// it (CheckLog). It returns the witness's stream IDs as log names them, waiting up to d
// for the send event (a tap records asynchronously).
func Witness(ctx context.Context, conn *grpc.ClientConn, delta bool, log *Log, d time.Duration) (map[int64]bool, error) {
	client := discovery.NewAggregatedDiscoveryServiceClient(conn)
	node := &core.Node{Id: resources.NodeID, Cluster: "witness"}
	var err error
	if delta {
		var s discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
		if s, err = client.DeltaAggregatedResources(ctx); err == nil {
			if err = s.Send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: rsrc.ClusterType}); err == nil {
				_, err = s.Recv()
			}
		}
	} else {
		var s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
		if s, err = client.StreamAggregatedResources(ctx); err == nil {
			if err = s.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: rsrc.ClusterType}); err == nil {
				_, err = s.Recv()
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	return witnessIDs(log, d)
}

// witnessIDs reads the log until the witness's send event and returns the stream IDs
// named so far.
func witnessIDs(log *Log, d time.Duration) (map[int64]bool, error) {
	var lines strings.Builder
	deadline := time.Now().Add(d)
	for !strings.Contains(lines.String(), `"event":"`+xdslog.EventSend+`"`) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("witness: no send event in %q", lines.String())
		}
		lines.WriteString(log.Take())
		time.Sleep(time.Millisecond)
	}
	ev, _, err := xdslog.Read(strings.NewReader(lines.String()))
	if err != nil {
		return nil, fmt.Errorf("witness log: %w", err)
	}
	ids := map[int64]bool{}
	for _, e := range ev {
		if e.Stream != 0 {
			ids[e.Stream] = true
		}
	}
	return ids, nil
}
