// Package controlplane runs one ADS control plane on a real gRPC server bound to
// 127.0.0.1, with explicit resource limits, so that `lab serve` and the experiments start
// it the same way and see the same refusals. It owns the state and picks the transport:
// one cache (Options.Cache: a SnapshotCache, or a LinearCache per type behind a
// MuxCache), the one frontend.StatePublisher that feeds it, and one transport (SotW or
// delta, chosen by a mode string) serving that cache.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/delta"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// Default limits. The send limit is large because a SotW push re-sends a whole type: a
// push of 10,000 clusters is a few MB.
const (
	DefaultMaxRecvMsgSize       = 4 << 20
	DefaultMaxSendMsgSize       = 64 << 20
	DefaultMaxConcurrentStreams = 16
	DefaultMaxStreams           = 2048
	DefaultKeepaliveMinTime     = 10 * time.Second
)

// DefaultAddr is where Envoy's bootstrap looks for the control plane.
const DefaultAddr = bootstrap.DefaultXDSAddr

// stopGrace bounds GracefulStop: ADS streams never end on their own, so after the front
// end's context is cancelled they should close at once; anything still open after this
// is cut by Stop.
const stopGrace = 2 * time.Second

// Limits bounds what one control-plane process accepts. Zero fields take the defaults.
type Limits struct {
	// MaxRecvMsgSize is the largest request in bytes; a bigger one fails its stream with
	// ResourceExhausted.
	MaxRecvMsgSize int
	// MaxSendMsgSize is the largest response in bytes.
	MaxSendMsgSize int
	// MaxConcurrentStreams is HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS, per connection.
	MaxConcurrentStreams uint32
	// MaxStreams is the total number of ADS streams served at once; extra streams are
	// refused with ResourceExhausted and recorded as a "refused" event.
	MaxStreams int
	// KeepaliveMinTime is the keepalive enforcement MinTime: a client pinging more often
	// is sent GOAWAY "too_many_pings". Pings without an active stream are permitted.
	KeepaliveMinTime time.Duration
}

// DefaultLimits returns the limits `lab serve` uses unless told otherwise.
func DefaultLimits() Limits {
	return Limits{
		MaxRecvMsgSize:       DefaultMaxRecvMsgSize,
		MaxSendMsgSize:       DefaultMaxSendMsgSize,
		MaxConcurrentStreams: DefaultMaxConcurrentStreams,
		MaxStreams:           DefaultMaxStreams,
		KeepaliveMinTime:     DefaultKeepaliveMinTime,
	}
}

// withDefaults fills zero fields and refuses negative ones.
func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	switch {
	case l.MaxRecvMsgSize < 0:
		return l, fmt.Errorf("max receive message size %d is negative", l.MaxRecvMsgSize)
	case l.MaxSendMsgSize < 0:
		return l, fmt.Errorf("max send message size %d is negative", l.MaxSendMsgSize)
	case l.MaxStreams < 0:
		return l, fmt.Errorf("max streams %d is negative", l.MaxStreams)
	case l.KeepaliveMinTime < 0:
		return l, fmt.Errorf("keepalive min time %s is negative", l.KeepaliveMinTime)
	}
	if l.MaxRecvMsgSize == 0 {
		l.MaxRecvMsgSize = d.MaxRecvMsgSize
	}
	if l.MaxSendMsgSize == 0 {
		l.MaxSendMsgSize = d.MaxSendMsgSize
	}
	if l.MaxConcurrentStreams == 0 {
		l.MaxConcurrentStreams = d.MaxConcurrentStreams
	}
	if l.MaxStreams == 0 {
		l.MaxStreams = d.MaxStreams
	}
	if l.KeepaliveMinTime == 0 {
		l.KeepaliveMinTime = d.KeepaliveMinTime
	}
	return l, nil
}

// Options configures Start.
type Options struct {
	// Mode is xdslog.ModeSotW or xdslog.ModeDelta.
	Mode string
	// Addr is 127.0.0.1:PORT (DefaultAddr when empty); port 0 picks a free port. Any
	// other host is refused.
	Addr string
	// NodeID is the node served (resources.NodeID when empty).
	NodeID string
	// Nodes, when set, serves one state per node ID, each published on its own
	// (PublisherFor): K Envoys on one machine need K listener ports, and the listener is
	// part of the state (lab bench --envoys). NodeID must then be empty. SnapshotCache:
	// one cache keyed on node ID and a publisher per node. LinearCache: a LinearPublisher
	// (four LinearCaches) per node behind a MuxCache that classifies requests by node ID
	// (the library's server fills in the node of a stream's later requests).
	Nodes []string
	// Versions is the SotW version strategy; must be empty in delta mode.
	Versions frontend.VersionStrategy
	// NackPolicy is the SotW NACK policy; must be empty in delta mode. Under sotw.Revert
	// the control plane answers a NACK by republishing what the client last accepted
	// (revert.go).
	NackPolicy sotw.NackPolicy
	// Cache is the library cache served (frontend.SnapshotCache when empty). With
	// frontend.LinearCache, SotW versions are per type and a NACK holds by construction:
	// Versions uniform and NackPolicy resend and backoff are refused (see
	// CheckCacheOptions); revert is served.
	Cache frontend.Cache
	// OnDemand is the on-demand shape of what will be published (delta only:
	// resources.OnDemand.CheckMode). With VirtualHosts the cache is served through
	// frontend.OnDemandCache, which answers VHDS as on-demand xDS asks.
	OnDemand resources.OnDemand
	// Recorder writes xds.log; required, and its mode must equal Mode.
	Recorder *xdslog.Recorder
	// Limits bounds the gRPC server; zero fields take defaults.
	Limits Limits
}

// ControlPlane is a running front end on its gRPC server: the publisher and the
// transport serving what it publishes.
type ControlPlane struct {
	addr   string
	port   int
	limits Limits
	pub    frontend.StatePublisher // the first node's
	pubs   map[string]frontend.StatePublisher
	nodes  []string
	// perNode: each node has a state of its own (Options.Nodes).
	perNode bool
	cache   frontend.Cache
	fe      frontend.FrontEnd
	rec     *xdslog.Recorder
	srv     *grpc.Server
	cancel  context.CancelFunc

	active    atomic.Int64 // ADS streams being served
	serveDone chan struct{}
	stopOnce  sync.Once

	mu      sync.Mutex
	unwatch func() bool // detaches Start's ctx
	// stopping refuses new reverts once Stop began; reverts counts those running, which
	// Stop waits for (revert.go).
	stopping  bool
	reverts   sync.WaitGroup
	revertCtx context.Context
}

// Start validates o, binds the address and serves the front end until Stop or until ctx
// is done.
func Start(ctx context.Context, o Options) (*ControlPlane, error) {
	fail := func(err error) (*ControlPlane, error) {
		return nil, fmt.Errorf("start %s control plane: %w", o.Mode, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	if o.Mode != xdslog.ModeSotW && o.Mode != xdslog.ModeDelta {
		return nil, fmt.Errorf("start control plane: unknown mode %q (want sotw or delta)", o.Mode)
	}
	if o.Recorder == nil {
		return fail(errors.New("no recorder: xds.log is required"))
	}
	if o.Recorder.Mode() != o.Mode {
		return fail(fmt.Errorf("recorder mode %q does not match", o.Recorder.Mode()))
	}
	if _, err := frontend.ParseVersionStrategy(string(o.Versions)); err != nil {
		return fail(err)
	}
	if _, err := sotw.ParseNackPolicy(string(o.NackPolicy)); err != nil {
		return fail(err)
	}
	if o.Mode == xdslog.ModeDelta {
		// Delta versions are content hashes and a NACKed hash is never re-sent, so these
		// options would silently do nothing; refuse them instead.
		if o.Versions != "" {
			return fail(fmt.Errorf("version strategy %q is a SotW option; leave it unset in delta mode", o.Versions))
		}
		if o.NackPolicy != "" {
			return fail(fmt.Errorf("NACK policy %q is a SotW option; leave it unset in delta mode", o.NackPolicy))
		}
	}
	if err := o.OnDemand.CheckMode(o.Mode == xdslog.ModeSotW); err != nil {
		return fail(err)
	}
	if len(o.Nodes) > 0 && o.NodeID != "" {
		return fail(fmt.Errorf("node ID %q with per-node states: give the nodes only", o.NodeID))
	}
	if err := checkNodes(o.Nodes); err != nil {
		return fail(err)
	}
	cacheKind, err := frontend.ParseCache(string(o.Cache))
	if err != nil {
		return fail(err)
	}
	if err := CheckCacheOptions(cacheKind, o.Mode, o.Versions, o.NackPolicy); err != nil {
		return fail(err)
	}
	limits, err := o.Limits.withDefaults()
	if err != nil {
		return fail(err)
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	port, err := parseListenAddr(o.Addr)
	if err != nil {
		return fail(err)
	}

	// The state: one cache and its one publisher. Delta's system_version_info is the
	// label and its resource versions are hashes, so in delta mode Versions is empty and
	// the strategy is Uniform.
	nodes, perNode := o.Nodes, len(o.Nodes) > 0
	if !perNode {
		nodes = []string{o.NodeID}
	}
	pubs := make(map[string]frontend.StatePublisher, len(nodes))
	var cache cachev3.Cache
	policy := o.NackPolicy
	if cacheKind.VersionsPerType() {
		// One LinearCache per type behind a MuxCache (or the indexed cache), its versions
		// behind a prefix of this start alone. Either records what it sent, not what was
		// ACKed, so a NACK never makes it re-send: the SotW transport presents the
		// rejected version (Hold) so that this holds even for a client that had nothing
		// before.
		byNode := make(map[string]cachev3.Cache, len(nodes))
		for _, n := range nodes {
			pub, c := newPerTypePublisher(cacheKind, frontend.LinearConfig{Recorder: o.Recorder, Node: n})
			pubs[n], byNode[n], cache = pub, c, c
		}
		if perNode {
			cache = &cachev3.MuxCache{
				Classify:      func(r *cachev3.Request) string { return r.GetNode().GetId() },
				ClassifyDelta: func(r *cachev3.DeltaRequest) string { return r.GetNode().GetId() },
				Caches:        byNode,
			}
		}
		if o.Mode == xdslog.ModeSotW && policy != sotw.Revert {
			// Revert holds too, and publishes what the client accepted.
			policy = sotw.Hold
		}
	} else {
		sc := frontend.NewSnapshotCache(nil)
		for _, n := range nodes {
			sp, err := frontend.NewPublisher(frontend.PublisherConfig{Cache: sc, NodeID: n, Recorder: o.Recorder, Strategy: o.Versions, PerNode: perNode})
			if err != nil {
				return fail(err)
			}
			pubs[n] = sp
		}
		cache = sc
	}
	revert := o.Mode == xdslog.ModeSotW && policy == sotw.Revert
	if revert {
		// A revert needs the content of earlier sets, and must not race a publish.
		for n, p := range pubs {
			pubs[n] = &revertingPublisher{StatePublisher: p}
		}
	}
	// Resources on the wire are named by the first node's publisher: every node's state
	// has the same names, and content it does not know is named by decoding it.
	pub := pubs[nodes[0]]
	if o.OnDemand.VirtualHosts {
		cache = &frontend.OnDemandCache{Cache: cache, State: func(node string) *resources.Set {
			if p, ok := pubs[node]; ok && perNode {
				return p.Current()
			}
			return pub.Current()
		}}
	}
	// The transport, serving that cache.
	feCtx, cancel := context.WithCancel(context.Background())
	var (
		fe frontend.FrontEnd
		// c is set before the server serves, so before any NACK can reach OnNack.
		c *ControlPlane
	)
	if o.Mode == xdslog.ModeSotW {
		cfg := sotw.Config{Cache: cache, Recorder: o.Recorder, NackPolicy: policy, Describe: pub.Describe}
		if revert {
			cfg.OnNack = func(n sotw.Nack) { c.onNack(n) }
		}
		fe, err = sotw.New(feCtx, cfg)
	} else {
		fe, err = delta.New(feCtx, delta.Config{Cache: cache, Recorder: o.Recorder, Describe: pub.Describe})
	}
	if err != nil {
		cancel()
		return fail(err)
	}
	lis, err := loopback.Listen(port)
	if err != nil {
		cancel()
		return fail(err)
	}
	c = &ControlPlane{
		addr:      lis.Addr().String(),
		port:      lis.Addr().(*net.TCPAddr).Port,
		limits:    limits,
		pub:       pub,
		pubs:      pubs,
		nodes:     nodes,
		perNode:   perNode,
		cache:     cacheKind,
		fe:        fe,
		rec:       o.Recorder,
		cancel:    cancel,
		serveDone: make(chan struct{}),
		revertCtx: feCtx,
	}
	c.srv = grpc.NewServer(
		grpc.MaxRecvMsgSize(limits.MaxRecvMsgSize),
		grpc.MaxSendMsgSize(limits.MaxSendMsgSize),
		grpc.MaxConcurrentStreams(limits.MaxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: limits.KeepaliveMinTime, PermitWithoutStream: true}),
		grpc.StreamInterceptor(c.limitStreams),
		// Stop returns only after every handler has returned, so a stopped control plane
		// leaves no stream goroutine behind.
		grpc.WaitForHandlers(true),
	)
	fe.Register(c.srv)
	go func() {
		defer close(c.serveDone)
		// Serve fails only when Accept does, which on a loopback listener means Stop
		// closed it; there is nothing to report.
		_ = c.srv.Serve(lis)
	}()
	c.mu.Lock()
	c.unwatch = context.AfterFunc(ctx, c.Stop)
	c.mu.Unlock()
	return c, nil
}

// parseListenAddr accepts 127.0.0.1:PORT (or localhost:PORT) with PORT 0..65535 (0:
// pick a free port).
func parseListenAddr(addr string) (int, error) { return loopback.ParseListenAddr(addr) }

// Addr returns the bound address, 127.0.0.1:PORT.
func (c *ControlPlane) Addr() string { return c.addr }

// Port returns the bound port.
func (c *ControlPlane) Port() int { return c.port }

// FrontEnd returns the transport being served.
func (c *ControlPlane) FrontEnd() frontend.FrontEnd { return c.fe }

// PublisherFor returns the publisher of one node's state (nil for a node not served one).
// Without Options.Nodes the one node is Options.NodeID as given ("" for the default).
func (c *ControlPlane) PublisherFor(node string) frontend.StatePublisher { return c.pubs[node] }

// Nodes lists the nodes with a state of their own (Options.Nodes), in the order given.
func (c *ControlPlane) Nodes() []string {
	if len(c.pubs) == 1 && c.nodes[0] == "" {
		return nil
	}
	return slices.Clone(c.nodes)
}

// checkNodes refuses empty and repeated node IDs.
func checkNodes(nodes []string) error {
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if n == "" {
			return errors.New("an empty node ID among the nodes")
		}
		if seen[n] {
			return fmt.Errorf("node %q listed twice", n)
		}
		seen[n] = true
	}
	return nil
}

// Publisher returns the publisher of the state served (with Options.Nodes, the first
// node's; see PublisherFor): what was published last
// (Current, Versions) and Publish for a set built elsewhere.
func (c *ControlPlane) Publisher() frontend.StatePublisher { return c.pub }

// Cache returns the library cache served.
func (c *ControlPlane) Cache() frontend.Cache { return c.cache }

// newPerTypePublisher is the publisher of a cache that versions each type itself, and
// the cache it feeds.
func newPerTypePublisher(kind frontend.Cache, cfg frontend.LinearConfig) (frontend.StatePublisher, cachev3.Cache) {
	if kind == frontend.IndexedCache {
		p := frontend.NewIndexedPublisher(cfg)
		return p, p.Cache()
	}
	p := frontend.NewLinearPublisher(cfg)
	return p, p.Cache()
}

// CheckCacheOptions refuses the SotW options a cache cannot honour, in one line saying
// why. Empty values are the defaults and always pass (with the LinearCache and the
// indexed cache they mean per-type versions and hold; hold and revert are served with
// every cache). The indexed cache mirrors the LinearCache, so it honours what the
// LinearCache honours and refuses the rest for the same reasons.
func CheckCacheOptions(cache frontend.Cache, mode string, versions frontend.VersionStrategy, policy sotw.NackPolicy) error {
	if !cache.VersionsPerType() || mode != xdslog.ModeSotW {
		return nil
	}
	if versions == frontend.Uniform {
		return errors.New("version strategy uniform needs the snapshot cache: each LinearCache (and the indexed cache) versions its own type (per-type is what it does)")
	}
	if policy == sotw.Resend {
		return errors.New("NACK policy resend needs the snapshot cache: a LinearCache (and the indexed cache) tracks what it sent, not what was ACKed, so it never re-sends a rejected response (hold is what it does)")
	}
	if policy == sotw.Backoff {
		return errors.New("NACK policy backoff needs the snapshot cache: a LinearCache (and the indexed cache) never re-sends a rejected response, so there is no re-send to delay (hold is what it does)")
	}
	return nil
}

// Recorder returns the xds.log recorder.
func (c *ControlPlane) Recorder() *xdslog.Recorder { return c.rec }

// Limits returns the limits in force (defaults filled in).
func (c *ControlPlane) Limits() Limits { return c.limits }

// ActiveStreams returns how many ADS streams are being served now.
func (c *ControlPlane) ActiveStreams() int { return int(c.active.Load()) }

// Publish makes s the state served to the node. It rebuilds only what s changes from the
// state served now (resources.Rebuild), so a change costs O(what changed) up to the cache.
func (c *ControlPlane) Publish(ctx context.Context, s resources.State) (*resources.Set, error) {
	set, err := resources.Rebuild(c.pub.Current(), s)
	if err != nil {
		return nil, fmt.Errorf("publish version %s: %w", s.Version, err)
	}
	if err := c.pub.Publish(ctx, set); err != nil {
		return nil, fmt.Errorf("publish version %s: %w", s.Version, err)
	}
	return set, nil
}

// PublishSet makes set, built by the caller (a scenario's desired state), the state
// served to the node.
func (c *ControlPlane) PublishSet(ctx context.Context, set *resources.Set) error {
	if err := c.pub.Publish(ctx, set); err != nil {
		return fmt.Errorf("publish version %s: %w", set.Version, err)
	}
	return nil
}

// Stop ends every stream and the server. It is idempotent; when it returns, every
// stream handler has returned and the listener is closed.
func (c *ControlPlane) Stop() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		if c.unwatch != nil {
			c.unwatch()
		}
		c.stopping = true
		c.mu.Unlock()
		done := make(chan struct{})
		go func() {
			c.srv.GracefulStop()
			close(done)
		}()
		// Cancelling the library's context makes its stream loops return, which lets
		// GracefulStop finish instead of waiting for clients that never hang up.
		c.cancel()
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			c.srv.Stop()
			<-done
		}
		<-c.serveDone
		// A revert still publishing (its context is cancelled) finishes quickly.
		c.reverts.Wait()
	})
}

// limitStreams enforces MaxStreams across all connections and records refusals, including
// messages over the size limits (gRPC fails those itself; this makes them visible in
// xds.log).
func (c *ControlPlane) limitStreams(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if n := c.active.Add(1); n > int64(c.limits.MaxStreams) {
		c.active.Add(-1)
		msg := fmt.Sprintf("stream limit reached: this control plane serves at most %d ADS streams at once (--max-streams)", c.limits.MaxStreams)
		c.rec.Emit(xdslog.Event{Event: xdslog.EventRefused, Error: methodName(info.FullMethod) + " refused: " + msg})
		return status.Error(codes.ResourceExhausted, msg)
	}
	defer c.active.Add(-1)
	return handler(srv, &recordingStream{ServerStream: ss, cp: c, method: methodName(info.FullMethod)})
}

// methodName shortens /envoy.service.discovery.v3.AggregatedDiscoveryService/X to X.
func methodName(full string) string {
	return full[strings.LastIndexByte(full, '/')+1:]
}

// recordingStream records messages refused for their size. The library drops receive
// errors silently, and it records a send before gRPC refuses it, so without this an
// oversized message would leave no trace, or a false one, in xds.log.
type recordingStream struct {
	grpc.ServerStream
	cp     *ControlPlane
	method string
	// One flag per direction: RecvMsg and SendMsg may run on different goroutines.
	recvFlagged, sendFlagged bool
}

func (s *recordingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err != nil && !s.recvFlagged && status.Code(err) == codes.ResourceExhausted {
		s.recvFlagged = true
		s.refused("request", err, "--max-recv-msg-bytes", s.cp.limits.MaxRecvMsgSize)
	}
	return err
}

func (s *recordingStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err != nil && !s.sendFlagged && status.Code(err) == codes.ResourceExhausted {
		s.sendFlagged = true
		s.refused("response", err, "--max-send-msg-bytes", s.cp.limits.MaxSendMsgSize)
	}
	return err
}

func (s *recordingStream) refused(what string, err error, flag string, limit int) {
	s.cp.rec.Emit(xdslog.Event{Event: xdslog.EventRefused, Error: fmt.Sprintf("%s %s refused: %s (%s %d)", s.method, what, status.Convert(err).Message(), flag, limit)})
}
