package bench

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// stuckWindow is the HTTP/2 stream and connection window a stuck client advertises:
// grpc-go's own default (64 KiB, internal/transport/defaults.go defaultWindowSize). Set
// explicitly because that turns off BDP estimation (dialoptions.go
// WithInitialWindowSize sets StaticWindowSize; internal/transport/http2_client.go
// newHTTP2Client then leaves bdpEst nil), so the window cannot grow and a few unread
// responses fill it.
const stuckWindow = 64 << 10

// stuckClients are the --stuck-clients clients: simulated clients (simclient), each on
// its own connection (its own HTTP/2 connection window, as a separate Envoy would have),
// that subscribe and ACK like the others until the initial state is theirs, and then
// stop reading (simclient.Client.StopReading). The response they were waiting for is
// still read and ACKed, so a watch of each type it changed is open again; what the next
// change sends them stays unread, in their window and then in the server's send. The
// question is whether anything else waits too.
type stuckClients struct {
	cancel  context.CancelFunc
	clients []*client.Sim
	done    sync.WaitGroup
}

// startStuck connects k stuck clients to addr in mode; they read until stopReading.
func startStuck(ctx context.Context, addr string, mode protocol.Mode, k int) (*stuckClients, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sc := &stuckClients{cancel: cancel}
	for i := 0; i < k; i++ {
		// The node the fan-out clients name: the snapshot cache keys states by node ID
		// (shared/publish.NewSnapshotCache, IDHash), so it is served the same state.
		c, err := client.NewSim(client.SimOptions{Mode: mode, Node: resources.NodeID, Addr: addr, Dial: []grpc.DialOption{
			grpc.WithInitialWindowSize(stuckWindow), grpc.WithInitialConnWindowSize(stuckWindow),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(controlplane.DefaultMaxSendMsgSize))}})
		if err != nil {
			sc.stop()
			return nil, fmt.Errorf("stuck client: %w", err)
		}
		sc.clients = append(sc.clients, c)
		sc.done.Add(1)
		go func() {
			defer sc.done.Done()
			_ = c.Run(sctx) // ends with sctx (stop); the meter sees the stream close
		}()
	}
	return sc, nil
}

// awaitState waits until every stuck client has accepted clusters, endpoints, a
// listener and a route: the whole initial state.
func (sc *stuckClients) awaitState(ctx context.Context) error {
	for i, c := range sc.clients {
		_, err := c.Simulated().WaitFor(ctx, func(s simclient.State) bool {
			for _, t := range []resources.Type{resources.CDS, resources.EDS, resources.LDS, resources.RDS} {
				if len(s.Accepted[t]) == 0 {
					return false
				}
			}
			return true
		})
		if err != nil {
			return fmt.Errorf("stuck client %d: initial state: %w", i+1, err)
		}
	}
	return nil
}

// stopReading makes every stuck client stop reading.
func (sc *stuckClients) stopReading() {
	for _, c := range sc.clients {
		c.Simulated().StopReading()
	}
}

// stop resets the stuck streams (which unblocks the server's sends); each closes its
// connection as it ends.
func (sc *stuckClients) stop() {
	sc.cancel()
	sc.done.Wait()
}
