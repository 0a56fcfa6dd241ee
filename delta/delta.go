// Package delta is the incremental (delta) ADS transport: go-control-plane's delta server
// on a delta-capable cache it is given (for the workbench, the library's snapshot
// cache). Each resource's version is the library's content hash; system_version_info is
// the published version label. Every request, send, ACK and NACK is recorded in
// xds.log. It holds no state of its own: the cache and what publishes to it
// (publish.Publisher) belong to the caller, and any number of transports may serve the
// same cache. It refuses the SotW method so that a mismatched Envoy fails loudly.
package delta

import (
	"context"
	"errors"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	deltaserver "github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	server "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"

	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Config configures the delta transport.
type Config struct {
	// Cache is what the library's server serves from (for the workbench, the
	// publish.NewSnapshotCache a publish.Publisher feeds); required.
	Cache cachev3.Cache
	// Recorder writes xds.log (nil: not recorded).
	Recorder *xdslog.Recorder
	// Describe hashes each resource sent (nil: frontend.DescribeWire); the name recorded
	// is the one on the wire. Pass the publisher's Describe.
	Describe frontend.DescribeFunc
	// Logger receives the library's logs (nil: discarded).
	Logger log.Logger
}

// FrontEnd is the delta ADS transport.
type FrontEnd struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer

	record frontend.Record
	srv    server.Server
}

var _ frontend.FrontEnd = (*FrontEnd)(nil)

// New builds a delta transport on cfg.Cache. ctx bounds the library server's lifetime.
func New(ctx context.Context, cfg Config) (*FrontEnd, error) {
	if cfg.Cache == nil {
		return nil, errors.New("delta: no cache to serve")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = log.LoggerFuncs{}
	}
	f := &FrontEnd{record: frontend.NewRecord(cfg.Recorder, cfg.Describe)}
	cb := server.CallbackFuncs{
		DeltaStreamOpenFunc:     f.record.Open,
		DeltaStreamClosedFunc:   f.record.Close,
		StreamDeltaRequestFunc:  f.record.Delta,
		StreamDeltaResponseFunc: f.record.DeltaResponse,
	}
	f.srv = server.NewServer(ctx, cfg.Cache, cb, deltaserver.WithLogger(logger))
	return f, nil
}

// Mode implements frontend.FrontEnd.
func (f *FrontEnd) Mode() protocol.Mode { return protocol.Delta }

// Register implements frontend.FrontEnd.
func (f *FrontEnd) Register(s *grpc.Server) { discovery.RegisterAggregatedDiscoveryServiceServer(s, f) }

// DeltaAggregatedResources serves delta ADS through the library.
func (f *FrontEnd) DeltaAggregatedResources(s discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return f.srv.DeltaAggregatedResources(s)
}

// RefusalMessage is the status message for a SotW client.
const RefusalMessage = "this control plane serves delta ADS (DeltaAggregatedResources) only; start Envoy with the bootstrap `lab bootstrap --mode delta` prints (api_type: DELTA_GRPC) or run the control plane with --mode=sotw"

// StreamAggregatedResources refuses SotW: serving it would let a SotW bootstrap talk to a
// server the user believes is delta.
func (f *FrontEnd) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return f.record.Refuse(s.Context(), "SotW stream", RefusalMessage)
}
