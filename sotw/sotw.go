// Package sotw is the State-of-the-World ADS transport: go-control-plane's SotW server,
// with ordered ADS pushes, on a cache it is given, recording every request, send, ACK
// and NACK in xds.log. It holds no state of its own (beyond the Backoff policy's NACK
// counts per open stream): the cache and what publishes to it (publish.Publisher) belong
// to the caller, and any number of transports may serve the same cache. Its one
// intervention in the cache's view is the NACK policy (Hold, Backoff, Revert; Revert's
// publish is the caller's, through Config.OnNack). It refuses the delta method so that a
// mismatched Envoy fails loudly.
package sotw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	sotwserver "github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	server "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/protocol"
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
	// Backoff lets the library re-send the rejected response, but only after a delay that
	// doubles with each consecutive NACK: the k-th NACK of a type on a stream since that
	// type's last ACK there waits Config.BackoffBase * 2^(k-1), at most Config.BackoffMax.
	//
	// The wait happens inside the StreamRequestFunc callback, which go-control-plane calls
	// synchronously in the stream's control loop (pkg/server/sotw/v3/ads.go processADS,
	// before the watch is re-created), so it delays the NACKed request and, meanwhile,
	// every other request and response of every type on that stream. That is the cost of
	// this implementation, not a property of the protocol: a server tracking its own
	// re-sends could delay only the rejected type's. The wait ends early, failing the
	// stream, when the stream's context or the server's ends.
	Backoff NackPolicy = "backoff"
	// Revert holds as Hold does and tells the control plane (Config.OnNack), which
	// republishes the last content the client accepted for that type (Cilium's approach,
	// cilium#43887): publishing is the control plane's job, not the transport's.
	Revert NackPolicy = "revert"
)

// Policies lists the NACK policies, the default first.
var Policies = []NackPolicy{Resend, Hold, Backoff, Revert}

// PolicyNames are Policies as strings, for flags and refusals.
func PolicyNames() []string {
	out := make([]string, len(Policies))
	for i, p := range Policies {
		out[i] = string(p)
	}
	return out
}

// ParseNackPolicy validates a --nack-policy value.
func ParseNackPolicy(s string) (NackPolicy, error) {
	switch NackPolicy(s) {
	case Resend, Hold, Backoff, Revert:
		return NackPolicy(s), nil
	case "":
		return Resend, nil
	}
	return "", fmt.Errorf("unknown NACK policy %q (want resend, hold, backoff or revert)", s)
}

// Backoff defaults.
const (
	DefaultBackoffBase = 100 * time.Millisecond
	DefaultBackoffMax  = 5 * time.Second
)

// BackoffDelay is the wait before the k-th consecutive NACK (k >= 1) is let through:
// base * 2^(k-1), at most ceiling.
func BackoffDelay(k int, base, ceiling time.Duration) time.Duration {
	d := base
	for i := 1; i < k && d < ceiling; i++ {
		d *= 2 // stops at the ceiling, long before it could overflow
	}
	return min(d, ceiling)
}

// Nack is a NACK as the transport reports it to Config.OnNack.
type Nack struct {
	Stream int64
	// Node is the stream's node ID (the library fills it in on requests that omit it).
	Node string
	Type resources.Type
	// SentVersion is the version_info of the rejected response; AcceptedVersion is the
	// client's previous good one, which its NACK carries.
	SentVersion, AcceptedVersion string
	// Error is the NACK's error_detail message.
	Error string
}

// Config configures the SotW transport.
type Config struct {
	// Cache is what the library's server serves from (for the workbench, the
	// publish.NewSnapshotCache a publish.Publisher feeds); required.
	Cache cachev3.Cache
	// Recorder writes xds.log (nil: not recorded).
	Recorder   *xdslog.Recorder
	NackPolicy NackPolicy
	// Describe names and hashes each resource sent (nil: frontend.DescribeWire). Pass the
	// publisher's Describe so that xds.log names resources as they were published.
	Describe frontend.DescribeFunc
	// Logger receives the library's logs (nil: discarded).
	Logger log.Logger
	// BackoffBase and BackoffMax are the Backoff policy's first delay and cap (zero:
	// DefaultBackoffBase, DefaultBackoffMax).
	BackoffBase, BackoffMax time.Duration
	// OnNack is told of every NACK under the Revert policy (required then, ignored
	// otherwise). It runs on a goroutine of its own, so the stream loop never waits for
	// it; the watch is held meanwhile, so the rejected response is not re-sent.
	OnNack func(Nack)
}

// FrontEnd is the SotW ADS transport.
type FrontEnd struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer

	record frontend.Record
	policy NackPolicy
	srv    server.Server
	onNack func(Nack)

	// Backoff state: the server's context, the delays, and per open stream its context
	// and consecutive NACKs per type.
	ctx                     context.Context
	backoffBase, backoffMax time.Duration
	mu                      sync.Mutex
	streams                 map[int64]*streamState
}

// streamState is what the Backoff policy keeps of one open stream.
type streamState struct {
	ctx   context.Context
	nacks map[resources.Type]int // consecutive NACKs since the type's last ACK
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
	if policy == Revert && cfg.OnNack == nil {
		return nil, errors.New("sotw: NACK policy revert needs Config.OnNack: the control plane republishes what the client accepted")
	}
	base, maxDelay := cfg.BackoffBase, cfg.BackoffMax
	if base < 0 || maxDelay < 0 {
		return nil, fmt.Errorf("sotw: negative backoff (base %s, max %s)", base, maxDelay)
	}
	if base == 0 {
		base = DefaultBackoffBase
	}
	if maxDelay == 0 {
		maxDelay = max(DefaultBackoffMax, base)
	}
	if maxDelay < base {
		return nil, fmt.Errorf("sotw: backoff max %s is below its base %s", maxDelay, base)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = log.LoggerFuncs{}
	}
	f := &FrontEnd{
		record:      frontend.NewRecord(cfg.Recorder, cfg.Describe),
		policy:      policy,
		onNack:      cfg.OnNack,
		ctx:         ctx,
		backoffBase: base,
		backoffMax:  maxDelay,
		streams:     map[int64]*streamState{},
	}
	cb := server.CallbackFuncs{
		StreamOpenFunc: func(sctx context.Context, id int64, typeURL string) error {
			if err := f.record.Open(sctx, id, typeURL); err != nil {
				return err
			}
			if f.policy == Backoff {
				// The stream's context, so that a backoff wait ends with the stream.
				f.mu.Lock()
				f.streams[id] = &streamState{ctx: sctx, nacks: map[resources.Type]int{}}
				f.mu.Unlock()
			}
			return nil
		},
		StreamClosedFunc: func(id int64, node *core.Node) {
			f.mu.Lock()
			delete(f.streams, id)
			f.mu.Unlock()
			f.record.Close(id, node)
		},
		StreamRequestFunc:  f.onRequest,
		StreamResponseFunc: f.record.SotWResponse,
	}
	f.srv = server.NewServer(ctx, cfg.Cache, cb, sotwserver.WithOrderedADS(), sotwserver.WithLogger(logger))
	return f, nil
}

// Mode implements frontend.FrontEnd.
func (f *FrontEnd) Mode() protocol.Mode { return protocol.SotW }

// Register implements frontend.FrontEnd.
func (f *FrontEnd) Register(s *grpc.Server) { discovery.RegisterAggregatedDiscoveryServiceServer(s, f) }

// StreamAggregatedResources serves SotW ADS through the library.
func (f *FrontEnd) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return f.srv.StreamAggregatedResources(s)
}

// RefusalMessage is the status message for a delta client.
const RefusalMessage = "this control plane serves SotW ADS (StreamAggregatedResources) only; start Envoy with the bootstrap `lab bootstrap --mode sotw` prints (api_type: GRPC) or run the control plane with --mode=delta"

// DeltaAggregatedResources refuses delta: serving it would let a delta bootstrap talk to a
// server the user believes is SotW.
func (f *FrontEnd) DeltaAggregatedResources(s discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return f.record.Refuse(s.Context(), "delta stream", RefusalMessage)
}

func (f *FrontEnd) onRequest(id int64, req *discovery.DiscoveryRequest) error {
	// The policies act on the recorder's classification (only the latest nonce answers a
	// send), so without a recorder every policy is Resend.
	typ, e, err := f.record.SotW(id, req)
	if err != nil {
		return err
	}
	switch f.policy {
	case Hold, Revert:
		if e.Event != xdslog.EventNack {
			return nil
		}
		// The library would see the previous good version, find it differs from the
		// snapshot and re-send the rejected response at once. Presenting the rejected
		// version instead makes the cache park the watch until the next publish.
		req.VersionInfo = e.SentVersion
		if f.policy == Revert {
			// The next publish is the revert; the stream loop must not wait for it.
			go f.onNack(Nack{Stream: id, Node: req.GetNode().GetId(), Type: typ, SentVersion: e.SentVersion, AcceptedVersion: e.Accepted(), Error: e.Error})
		}
	case Backoff:
		return f.backoff(id, typ, e)
	}
	return nil
}

// backoff counts NACKs per stream and type (an ACK resets the count) and, on a NACK,
// waits before returning, which is before the library processes the request and re-sends
// (see Backoff for what else that delays).
func (f *FrontEnd) backoff(id int64, typ resources.Type, e xdslog.Event) error {
	f.mu.Lock()
	st := f.streams[id]
	var k int
	if st != nil {
		switch e.Event {
		case xdslog.EventAck:
			delete(st.nacks, typ)
		case xdslog.EventNack:
			st.nacks[typ]++
			k = st.nacks[typ]
		}
	}
	f.mu.Unlock()
	if k == 0 {
		return nil
	}
	t := time.NewTimer(BackoffDelay(k, f.backoffBase, f.backoffMax))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-st.ctx.Done():
		return status.Errorf(codes.Canceled, "sotw: backoff after %s NACK %d cut short: stream ended: %v", typ, k, st.ctx.Err())
	case <-f.ctx.Done():
		return status.Errorf(codes.Unavailable, "sotw: backoff after %s NACK %d cut short: server stopping", typ, k)
	}
}

// nackCount is the Backoff policy's count of consecutive NACKs of typ on stream id since
// its last ACK (0 for an unknown stream, or under another policy).
func (f *FrontEnd) nackCount(id int64, typ resources.Type) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st := f.streams[id]; st != nil {
		return st.nacks[typ]
	}
	return 0
}
