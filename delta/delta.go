// Package delta is the incremental (delta) ADS front end: go-control-plane's delta server
// on the library's delta-capable snapshot cache. Each resource's version is the library's
// content hash; system_version_info is the published version label. Every request, send,
// ACK and NACK is recorded in xds.log. It refuses the SotW method so that a mismatched
// Envoy fails loudly.
package delta

import (
	"context"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	deltaserver "github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	server "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Config configures the delta front end.
type Config struct {
	NodeID   string // default resources.NodeID
	Recorder *xdslog.Recorder
	// Logger receives the library's logs (nil: discarded).
	Logger log.Logger
}

// FrontEnd is the delta ADS server.
type FrontEnd struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer

	pub *frontend.Publisher
	rec *xdslog.Recorder
	srv server.Server
}

var _ frontend.FrontEnd = (*FrontEnd)(nil)

// New builds a delta front end. ctx bounds the library server's lifetime.
func New(ctx context.Context, cfg Config) (*FrontEnd, error) {
	if cfg.NodeID == "" {
		cfg.NodeID = resources.NodeID
	}
	logger := cfg.Logger
	if logger == nil {
		logger = frontend.DiscardLogger{}
	}
	c := cachev3.NewSnapshotCache(true, cachev3.IDHash{}, logger)
	f := &FrontEnd{
		// Delta's system_version_info is the label; per-resource versions are hashes, so
		// the version strategy does not apply.
		pub: &frontend.Publisher{Cache: c, NodeID: cfg.NodeID, Recorder: cfg.Recorder, Strategy: frontend.Uniform},
		rec: cfg.Recorder,
	}
	cb := server.CallbackFuncs{
		DeltaStreamOpenFunc: func(_ context.Context, id int64, _ string) error {
			f.rec.StreamOpen(id)
			return nil
		},
		DeltaStreamClosedFunc:   func(id int64, _ *core.Node) { f.rec.StreamClose(id) },
		StreamDeltaRequestFunc:  f.onRequest,
		StreamDeltaResponseFunc: f.onResponse,
	}
	f.srv = server.NewServer(ctx, c, cb, deltaserver.WithLogger(logger))
	return f, nil
}

// Mode implements frontend.FrontEnd.
func (f *FrontEnd) Mode() string { return xdslog.ModeDelta }

// Register implements frontend.FrontEnd.
func (f *FrontEnd) Register(s *grpc.Server) { discovery.RegisterAggregatedDiscoveryServiceServer(s, f) }

// Publish implements frontend.FrontEnd.
func (f *FrontEnd) Publish(ctx context.Context, set *resources.Set) error {
	return f.pub.Publish(ctx, set)
}

// Current implements frontend.FrontEnd.
func (f *FrontEnd) Current() *resources.Set { return f.pub.Current() }

// DeltaAggregatedResources serves delta ADS through the library.
func (f *FrontEnd) DeltaAggregatedResources(s discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return f.srv.DeltaAggregatedResources(s)
}

// RefusalMessage is the status message for a SotW client.
const RefusalMessage = "this control plane serves delta ADS (DeltaAggregatedResources) only; start Envoy with bootstrap/delta.yaml (api_type: DELTA_GRPC) or run the control plane with --mode=sotw"

// StreamAggregatedResources refuses SotW: serving it would let a SotW bootstrap talk to a
// server the user believes is delta.
func (f *FrontEnd) StreamAggregatedResources(discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return frontend.RefuseProtocol(f.rec, "SotW stream", RefusalMessage)
}

// onRequest runs before the library fills in node and type defaults; with ADS the client
// must name the type on every request, so the type URL is checked here.
func (f *FrontEnd) onRequest(id int64, req *discovery.DeltaDiscoveryRequest) error {
	typ, err := frontend.CheckType(f.rec, id, req.GetTypeUrl())
	if err != nil {
		return err
	}
	q := xdslog.DeltaRequest{Subscribe: req.GetResourceNamesSubscribe(), Unsubscribe: req.GetResourceNamesUnsubscribe(),
		Initial: req.GetInitialResourceVersions(), Nonce: req.GetResponseNonce()}
	if req.GetErrorDetail() != nil {
		msg := req.GetErrorDetail().GetMessage()
		q.Error = &msg
	}
	f.rec.Delta(id, string(typ), q)
	return nil
}

func (f *FrontEnd) onResponse(id int64, _ *discovery.DeltaDiscoveryRequest, resp *discovery.DeltaDiscoveryResponse) {
	typ, _ := resources.TypeOf(resp.GetTypeUrl())
	res := make([]xdslog.Resource, len(resp.GetResources()))
	for i, r := range resp.GetResources() {
		_, hash := f.pub.Describe(r.GetResource())
		res[i] = xdslog.Resource{Name: r.GetName(), Version: r.GetVersion(), Hash: hash}
	}
	f.rec.Send(id, string(typ), resp.GetNonce(), resp.GetSystemVersionInfo(), res, resp.GetRemovedResources(), proto.Size(resp))
}

// Versions implements frontend.FrontEnd: system_version_info per type.
func (f *FrontEnd) Versions() map[resources.Type]string { return f.pub.Versions() }
