// Package sotw is the State-of-the-World ADS transport: go-control-plane's SotW server,
// with ordered ADS pushes, on a cache it is given, recording every request, send, ACK
// and NACK in xds.log. It holds no state of its own: the cache and what publishes to it
// (frontend.Publisher) belong to the caller, and any number of transports may serve the
// same cache. Its one intervention in the cache's view is the NACK policy (Hold). It
// refuses the delta method so that a mismatched Envoy fails loudly.
package sotw

import (
	"context"
	"errors"
	"fmt"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	sotwserver "github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	server "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// NackPolicy says what the server does after a client rejects a response.
type NackPolicy string

const (
	// Resend is the library's behaviour: the NACK carries the previous good version, the
	// cache sees a mismatch and re-sends the rejected response at once, again and again.
	Resend NackPolicy = "resend"
	// Hold answers nothing more for that type until a new state is published.
	Hold NackPolicy = "hold"
)

// ParseNackPolicy validates a --nack-policy value.
func ParseNackPolicy(s string) (NackPolicy, error) {
	switch NackPolicy(s) {
	case Resend, Hold:
		return NackPolicy(s), nil
	case "":
		return Resend, nil
	}
	return "", fmt.Errorf("unknown NACK policy %q (want resend or hold)", s)
}

// Config configures the SotW transport.
type Config struct {
	// Cache is what the library's server serves from (for the workbench, the
	// frontend.NewSnapshotCache a frontend.Publisher feeds); required.
	Cache cachev3.Cache
	// Recorder writes xds.log (nil: not recorded).
	Recorder   *xdslog.Recorder
	NackPolicy NackPolicy
	// Describe names and hashes each resource sent (nil: frontend.DescribeWire). Pass the
	// publisher's Describe so that xds.log names resources as they were published.
	Describe frontend.DescribeFunc
	// Logger receives the library's logs (nil: discarded).
	Logger log.Logger
}

// FrontEnd is the SotW ADS transport.
type FrontEnd struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer

	describe frontend.DescribeFunc
	rec      *xdslog.Recorder
	policy   NackPolicy
	srv      server.Server
}

var _ frontend.FrontEnd = (*FrontEnd)(nil)

// New builds a SotW transport on cfg.Cache. ctx bounds the library server's lifetime.
func New(ctx context.Context, cfg Config) (*FrontEnd, error) {
	if cfg.Cache == nil {
		return nil, errors.New("sotw: no cache to serve")
	}
	policy, err := ParseNackPolicy(string(cfg.NackPolicy))
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = frontend.DiscardLogger{}
	}
	f := &FrontEnd{
		describe: cfg.Describe,
		rec:      cfg.Recorder,
		policy:   policy,
	}
	if f.describe == nil {
		f.describe = frontend.DescribeWire
	}
	cb := server.CallbackFuncs{
		StreamOpenFunc: func(_ context.Context, id int64, _ string) error {
			f.rec.StreamOpen(id)
			return nil
		},
		StreamClosedFunc:   func(id int64, _ *core.Node) { f.rec.StreamClose(id) },
		StreamRequestFunc:  f.onRequest,
		StreamResponseFunc: f.onResponse,
	}
	f.srv = server.NewServer(ctx, cfg.Cache, cb, sotwserver.WithOrderedADS(), sotwserver.WithLogger(logger))
	return f, nil
}

// Mode implements frontend.FrontEnd.
func (f *FrontEnd) Mode() string { return xdslog.ModeSotW }

// Register implements frontend.FrontEnd.
func (f *FrontEnd) Register(s *grpc.Server) { discovery.RegisterAggregatedDiscoveryServiceServer(s, f) }

// StreamAggregatedResources serves SotW ADS through the library.
func (f *FrontEnd) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return f.srv.StreamAggregatedResources(s)
}

// RefusalMessage is the status message for a delta client.
const RefusalMessage = "this control plane serves SotW ADS (StreamAggregatedResources) only; start Envoy with bootstrap/sotw.yaml (api_type: GRPC) or run the control plane with --mode=delta"

// DeltaAggregatedResources refuses delta: serving it would let a delta bootstrap talk to a
// server the user believes is SotW.
func (f *FrontEnd) DeltaAggregatedResources(discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return frontend.RefuseProtocol(f.rec, "delta stream", RefusalMessage)
}

func (f *FrontEnd) onRequest(id int64, req *discovery.DiscoveryRequest) error {
	typ, err := frontend.CheckType(f.rec, id, req.GetTypeUrl())
	if err != nil {
		return err
	}
	q := xdslog.SotWRequest{Node: req.GetNode().GetId(), Names: req.GetResourceNames(), VersionInfo: req.GetVersionInfo(), Nonce: req.GetResponseNonce()}
	if req.GetErrorDetail() != nil {
		msg := req.GetErrorDetail().GetMessage()
		q.Error = &msg
	}
	e := f.rec.SotW(id, string(typ), q)
	if e.Event == xdslog.EventNack && f.policy == Hold {
		// The library would see the previous good version, find it differs from the
		// snapshot and re-send the rejected response at once. Presenting the rejected
		// version instead makes the cache park the watch until the next publish.
		req.VersionInfo = e.SentVersion
	}
	return nil
}

func (f *FrontEnd) onResponse(_ context.Context, id int64, req *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
	typ, _ := resources.TypeOf(resp.GetTypeUrl())
	res := make([]xdslog.Resource, len(resp.GetResources()))
	for i, a := range resp.GetResources() {
		name, hash := f.describe(a)
		res[i] = xdslog.Resource{Name: name, Version: resp.GetVersionInfo(), Hash: hash}
	}
	f.rec.Send(id, string(typ), resp.GetNonce(), resp.GetVersionInfo(), res, nil, proto.Size(resp))
}
