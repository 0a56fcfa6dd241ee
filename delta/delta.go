// Package delta is the incremental (delta) ADS transport: go-control-plane's delta server
// on a delta-capable cache it is given (for the workbench, the library's snapshot
// cache). Each resource's version is the library's content hash; system_version_info is
// the published version label. Every request, send, ACK and NACK is recorded in
// xds.log. It holds no state of its own: the cache and what publishes to it
// (frontend.Publisher) belong to the caller, and any number of transports may serve the
// same cache. It refuses the SotW method so that a mismatched Envoy fails loudly.
package delta

import (
	"context"
	"errors"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	deltaserver "github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	server "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Config configures the delta transport.
type Config struct {
	// Cache is what the library's server serves from (for the workbench, the
	// frontend.NewSnapshotCache a frontend.Publisher feeds); required.
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

	describe frontend.DescribeFunc
	rec      *xdslog.Recorder
	srv      server.Server
}

var _ frontend.FrontEnd = (*FrontEnd)(nil)

// New builds a delta transport on cfg.Cache. ctx bounds the library server's lifetime.
func New(ctx context.Context, cfg Config) (*FrontEnd, error) {
	if cfg.Cache == nil {
		return nil, errors.New("delta: no cache to serve")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = frontend.DiscardLogger{}
	}
	f := &FrontEnd{describe: cfg.Describe, rec: cfg.Recorder}
	if f.describe == nil {
		f.describe = frontend.DescribeWire
	}
	cb := server.CallbackFuncs{
		DeltaStreamOpenFunc: func(sctx context.Context, id int64, _ string) error {
			f.rec.StreamOpen(id, frontend.PeerAddr(sctx))
			return nil
		},
		DeltaStreamClosedFunc:   func(id int64, _ *core.Node) { f.rec.StreamClose(id) },
		StreamDeltaRequestFunc:  f.onRequest,
		StreamDeltaResponseFunc: f.onResponse,
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
	return frontend.RefuseProtocol(s.Context(), f.rec, "SotW stream", RefusalMessage)
}

// onRequest runs before the library fills in node and type defaults; with ADS the client
// must name the type on every request, so the type URL is checked here.
func (f *FrontEnd) onRequest(id int64, req *discovery.DeltaDiscoveryRequest) error {
	typ, err := frontend.CheckType(f.rec, id, req.GetTypeUrl())
	if err != nil {
		return err
	}
	f.rec.Delta(id, string(typ), frontend.DeltaRequest(req))
	return nil
}

func (f *FrontEnd) onResponse(id int64, _ *discovery.DeltaDiscoveryRequest, resp *discovery.DeltaDiscoveryResponse) {
	typ, _ := resources.TypeOf(resp.GetTypeUrl())
	f.rec.Send(id, string(typ), resp.GetNonce(), resp.GetSystemVersionInfo(), frontend.DeltaSent(resp, f.describe), resp.GetRemovedResources(), proto.Size(resp))
}
