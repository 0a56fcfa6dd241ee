// Package sotw is the State-of-the-World ADS front end: go-control-plane's SotW server on
// a SnapshotCache with ordered ADS pushes, recording every request, send, ACK and NACK in
// xds.log. It refuses the delta method so that a mismatched Envoy fails loudly.
package sotw

import (
	"context"
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

// Config configures the SotW front end.
type Config struct {
	NodeID     string // default resources.NodeID
	Recorder   *xdslog.Recorder
	Versions   frontend.VersionStrategy
	NackPolicy NackPolicy
	// Logger receives the library's logs (nil: discarded).
	Logger log.Logger
}

// FrontEnd is the SotW ADS server.
type FrontEnd struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer

	pub    *frontend.Publisher
	rec    *xdslog.Recorder
	policy NackPolicy
	srv    server.Server
}

var _ frontend.FrontEnd = (*FrontEnd)(nil)

// New builds a SotW front end. ctx bounds the library server's lifetime.
func New(ctx context.Context, cfg Config) (*FrontEnd, error) {
	if cfg.NodeID == "" {
		cfg.NodeID = resources.NodeID
	}
	strategy, err := frontend.ParseVersionStrategy(string(cfg.Versions))
	if err != nil {
		return nil, err
	}
	policy, err := ParseNackPolicy(string(cfg.NackPolicy))
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = frontend.DiscardLogger{}
	}
	// ads=true: responses are only sent when the request names cover the snapshot's.
	c := cachev3.NewSnapshotCache(true, cachev3.IDHash{}, logger)
	f := &FrontEnd{
		pub:    &frontend.Publisher{Cache: c, NodeID: cfg.NodeID, Recorder: cfg.Recorder, Strategy: strategy},
		rec:    cfg.Recorder,
		policy: policy,
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
	f.srv = server.NewServer(ctx, c, cb, sotwserver.WithOrderedADS(), sotwserver.WithLogger(logger))
	return f, nil
}

// Mode implements frontend.FrontEnd.
func (f *FrontEnd) Mode() string { return xdslog.ModeSotW }

// Register implements frontend.FrontEnd.
func (f *FrontEnd) Register(s *grpc.Server) { discovery.RegisterAggregatedDiscoveryServiceServer(s, f) }

// Publish implements frontend.FrontEnd.
func (f *FrontEnd) Publish(ctx context.Context, set *resources.Set) error {
	return f.pub.Publish(ctx, set)
}

// Current implements frontend.FrontEnd.
func (f *FrontEnd) Current() *resources.Set { return f.pub.Current() }

// Versions implements frontend.FrontEnd.
func (f *FrontEnd) Versions() map[resources.Type]string { return f.pub.Versions() }

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
	q := xdslog.SotWRequest{Names: req.GetResourceNames(), VersionInfo: req.GetVersionInfo(), Nonce: req.GetResponseNonce()}
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
		name, hash := f.pub.Describe(a)
		res[i] = xdslog.Resource{Name: name, Version: resp.GetVersionInfo(), Hash: hash}
	}
	f.rec.Send(id, string(typ), resp.GetNonce(), resp.GetVersionInfo(), res, nil, proto.Size(resp))
}
