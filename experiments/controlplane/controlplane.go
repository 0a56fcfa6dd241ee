// Package controlplane runs one ADS control plane on a real gRPC server bound to
// 127.0.0.1, with explicit resource limits. It owns the state and picks the transport:
// one cache (Options.Cache: a SnapshotCache with go-control-plane's ADS rule or without
// it, a LinearCache per type behind a MuxCache, or the indexed cache), the one publish.StatePublisher that feeds it, and one transport (SotW or
// delta, chosen by Options.Mode) serving that cache.
//
// New builds one and Serve serves it on a listener the caller brings (a test's
// bufconn); Listen serves it on a loopback address, and Start is New then Listen.
// Outside tests its one caller is experiments/session, which makes each instance of a
// run with New and Listen, so that `lab serve` and the experiments start it the same way
// and see the same refusals.
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

	"github.com/xds-workbench/lab/delta"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
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

// DefaultAddr is where Start listens when Options.Addr is empty: the workbench's xDS
// address, where a default bootstrap points Envoy too.
const DefaultAddr = loopback.DefaultXDSAddr

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

// Options configures New and Start.
type Options struct {
	// Mode is protocol.SotW or protocol.Delta.
	Mode protocol.Mode
	// Addr is where Start listens: 127.0.0.1:PORT (DefaultAddr when empty); port 0 picks
	// a free port. Any other host is refused. New ignores it (Serve takes a listener).
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
	Versions publish.VersionStrategy
	// NackPolicy is the SotW NACK policy; must be empty in delta mode. Under sotw.Revert
	// the control plane answers a NACK by republishing what the client last accepted
	// (revert.go).
	NackPolicy sotw.NackPolicy
	// Cache is the library cache served (publish.SnapshotCache when empty). With
	// publish.LinearCache, SotW versions are per type and a NACK holds by construction:
	// Versions uniform and NackPolicy resend and backoff are refused (see
	// CheckCacheOptions); revert is served. publish.SnapshotCacheNoADS is the
	// SnapshotCache without the ADS rule, with every SotW option of the SnapshotCache.
	Cache publish.Cache
	// OnDemand is the on-demand shape of what will be published (delta only:
	// resources.OnDemand.CheckMode). With VirtualHosts the cache is served through
	// publish.OnDemandCache, which answers VHDS as on-demand xDS asks.
	OnDemand resources.OnDemand
	// Recorder writes xds.log; required, and its mode must equal Mode.
	Recorder *xdslog.Recorder
	// Limits bounds the gRPC server; zero fields take defaults.
	Limits Limits
}

// ControlPlane is a running front end on its gRPC server: the publisher and the
// transport serving what it publishes.
type ControlPlane struct {
	limits Limits
	pub    publish.StatePublisher // the first node's
	pubs   map[string]publish.StatePublisher
	nodes  []string
	// perNode: each node has a state of its own (Options.Nodes).
	perNode bool
	cache   publish.Cache
	fe      frontend.FrontEnd
	rec     *xdslog.Recorder
	srv     *grpc.Server
	cancel  context.CancelFunc

	active    atomic.Int64 // ADS streams being served
	serveDone chan struct{}
	stopOnce  sync.Once

	mu sync.Mutex
	// addr and port name the listener served; served: Serve (or Start) took one, so Stop
	// waits for serveDone.
	addr    string
	port    int
	served  bool
	unwatch func() bool // detaches Start's ctx
	// stopping refuses new reverts once Stop began; reverts counts those running, which
	// Stop waits for (revert.go).
	stopping  bool
	reverts   sync.WaitGroup
	revertCtx context.Context
}

// Start validates o, binds o.Addr and serves the front end until Stop or until ctx is
// done: New, then Listen.
func Start(ctx context.Context, o Options) (*ControlPlane, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	c, err := New(o)
	if err != nil {
		return nil, fmt.Errorf("start %w", err)
	}
	if err := c.Listen(ctx, o.Addr); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Listen binds addr (127.0.0.1:PORT, DefaultAddr when empty; port 0 picks a free one)
// and serves on it in a goroutine until Stop or until ctx is done; Addr and Port name
// the listener when it returns. It is Start for a control plane made by New.
func (c *ControlPlane) Listen(ctx context.Context, addr string) error {
	mode := c.rec.Mode()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start %s control plane: %w", mode, err)
	}
	lis, err := listen(addr)
	if err != nil {
		return fmt.Errorf("start %s control plane: %w", mode, err)
	}
	if err := c.bind(lis); err != nil {
		_ = lis.Close()
		return fmt.Errorf("start %s control plane: %w", mode, err)
	}
	go func() {
		// Serve fails only when Accept does, which on a loopback listener means Stop
		// closed it; there is nothing to report.
		_ = c.serve(lis)
	}()
	c.mu.Lock()
	c.unwatch = context.AfterFunc(ctx, c.Stop)
	c.mu.Unlock()
	return nil
}

// listen binds addr (DefaultAddr when empty), which must be 127.0.0.1:PORT.
func listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	port, err := parseListenAddr(addr)
	if err != nil {
		return nil, err
	}
	return loopback.Listen(port)
}

// New validates o and builds the control plane: the cache and its publishers, the
// transport serving it and the gRPC server with o's limits, not serving yet. o.Addr is
// Start's and is ignored here: Serve takes the listener, so a test can serve on a
// bufconn listener. Stop it when done, served or not.
func New(o Options) (*ControlPlane, error) {
	cacheKind, limits, err := o.check()
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*ControlPlane, error) {
		return nil, fmt.Errorf("%s control plane: %w", o.Mode, err)
	}
	st, err := newState(o, cacheKind)
	if err != nil {
		return fail(err)
	}
	feCtx, cancel := context.WithCancel(context.Background())
	c := &ControlPlane{
		limits:    limits,
		pub:       st.pub,
		pubs:      st.pubs,
		nodes:     st.nodes,
		perNode:   st.perNode,
		cache:     cacheKind,
		rec:       o.Recorder,
		cancel:    cancel,
		serveDone: make(chan struct{}),
		revertCtx: feCtx,
	}
	// c is complete before the server serves, so before any NACK can reach onNack.
	if c.fe, err = newTransport(feCtx, o, st, c.onNack); err != nil {
		cancel()
		return fail(err)
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
	c.fe.Register(c.srv)
	return c, nil
}

// Serve accepts ADS streams on lis until Stop, as grpc.Server.Serve does; lis is closed
// when it returns. Addr and Port then name lis (Port is 0 for a listener not on TCP, such
// as bufconn). A control plane serves one listener: a second Serve fails, and so does
// Serve after Stop.
func (c *ControlPlane) Serve(lis net.Listener) error {
	if err := c.bind(lis); err != nil {
		_ = lis.Close()
		return err
	}
	return c.serve(lis)
}

// bind records lis as the listener served, unless the control plane is stopping or
// already serving one.
func (c *ControlPlane) bind(lis net.Listener) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopping:
		return grpc.ErrServerStopped
	case c.served:
		return errors.New("control plane: already serving a listener")
	}
	c.served = true
	c.addr = lis.Addr().String()
	if a, ok := lis.Addr().(*net.TCPAddr); ok {
		c.port = a.Port
	}
	return nil
}

// serve runs the gRPC server on lis, which bind accepted.
func (c *ControlPlane) serve(lis net.Listener) error {
	defer close(c.serveDone)
	return c.srv.Serve(lis)
}

// check validates o (all but Addr, which is Start's) and returns its cache and its
// limits with the defaults filled in.
func (o Options) check() (publish.Cache, Limits, error) {
	fail := func(err error) (publish.Cache, Limits, error) {
		return "", Limits{}, fmt.Errorf("%s control plane: %w", o.Mode, err)
	}
	if err := o.Mode.Check(); err != nil {
		return "", Limits{}, fmt.Errorf("control plane: %w", err)
	}
	if o.Recorder == nil {
		return fail(errors.New("no recorder: xds.log is required"))
	}
	if o.Recorder.Mode() != o.Mode {
		return fail(fmt.Errorf("recorder mode %q does not match", o.Recorder.Mode()))
	}
	if err := CheckSotWOptions(o.Mode, o.Versions, o.NackPolicy); err != nil {
		return fail(err)
	}
	if err := o.OnDemand.CheckMode(o.Mode == protocol.SotW); err != nil {
		return fail(err)
	}
	if len(o.Nodes) > 0 && o.NodeID != "" {
		return fail(fmt.Errorf("node ID %q with per-node states: give the nodes only", o.NodeID))
	}
	if err := checkNodes(o.Nodes); err != nil {
		return fail(err)
	}
	cacheKind, err := publish.ParseCache(string(o.Cache))
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
	return cacheKind, limits, nil
}

// CheckSotWOptions refuses an unknown version strategy or NACK policy, and either one set
// in delta mode, where it would silently do nothing.
func CheckSotWOptions(mode protocol.Mode, versions publish.VersionStrategy, policy sotw.NackPolicy) error {
	if _, err := publish.ParseVersionStrategy(string(versions)); err != nil {
		return err
	}
	if _, err := sotw.ParseNackPolicy(string(policy)); err != nil {
		return err
	}
	if mode != protocol.Delta {
		return nil
	}
	// Delta versions are content hashes and a NACKed hash is never re-sent, so these
	// options would silently do nothing; refuse them instead.
	if versions != "" {
		return fmt.Errorf("version strategy %q is a SotW option; leave it unset in delta mode", versions)
	}
	if policy != "" {
		return fmt.Errorf("NACK policy %q is a SotW option; leave it unset in delta mode", policy)
	}
	return nil
}

// state is what a control plane serves: one cache, the publisher of each node's state
// feeding it, and the SotW NACK policy the cache is served with.
type state struct {
	cache   cachev3.Cache
	pub     publish.StatePublisher // the first node's
	pubs    map[string]publish.StatePublisher
	nodes   []string
	perNode bool
	policy  sotw.NackPolicy
}

// revert reports whether a NACK is answered by republishing what the client accepted.
func (s *state) revert(mode protocol.Mode) bool {
	return mode == protocol.SotW && s.policy == sotw.Revert
}

// newState builds the cache of kind and its publishers. Delta's system_version_info is
// the label and its resource versions are hashes, so in delta mode Versions is empty and
// the strategy is Uniform.
func newState(o Options, kind publish.Cache) (*state, error) {
	st := &state{nodes: o.Nodes, perNode: len(o.Nodes) > 0, policy: o.NackPolicy}
	if !st.perNode {
		st.nodes = []string{o.NodeID}
	}
	st.pubs = make(map[string]publish.StatePublisher, len(st.nodes))
	if kind.VersionsPerType() {
		st.perTypeCaches(o, kind)
	} else if err := st.snapshotCache(o, kind); err != nil {
		return nil, err
	}
	if st.revert(o.Mode) {
		// A revert needs the content of earlier sets, and must not race a publish.
		for n, p := range st.pubs {
			st.pubs[n] = &revertingPublisher{StatePublisher: p}
		}
	}
	// Resources on the wire are named by the first node's publisher: every node's state
	// has the same names, and content it does not know is named by decoding it.
	st.pub = st.pubs[st.nodes[0]]
	if o.OnDemand.VirtualHosts {
		st.cache = &publish.OnDemandCache{Cache: st.cache, State: func(node string) *resources.Set {
			if p, ok := st.pubs[node]; ok && st.perNode {
				return p.Current()
			}
			return st.pub.Current()
		}}
	}
	return st, nil
}

// perTypeCaches serves one LinearCache per type behind a MuxCache (or the indexed
// cache) per node, its versions behind a prefix of this start alone. Either records what
// it sent, not what was ACKed, so a NACK never makes it re-send: the SotW transport
// presents the rejected version (Hold) so that this holds even for a client that had
// nothing before.
func (st *state) perTypeCaches(o Options, kind publish.Cache) {
	byNode := make(map[string]cachev3.Cache, len(st.nodes))
	for _, n := range st.nodes {
		pub, c := newPerTypePublisher(kind, publish.LinearConfig{Recorder: o.Recorder, Node: n})
		st.pubs[n], byNode[n], st.cache = pub, c, c
	}
	if st.perNode {
		st.cache = &cachev3.MuxCache{
			Classify:      func(r *cachev3.Request) string { return r.GetNode().GetId() },
			ClassifyDelta: func(r *cachev3.DeltaRequest) string { return r.GetNode().GetId() },
			Caches:        byNode,
		}
	}
	if o.Mode == protocol.SotW && st.policy != sotw.Revert {
		// Revert holds too, and publishes what the client accepted.
		st.policy = sotw.Hold
	}
}

// snapshotCache serves one SnapshotCache keyed on node ID, with a publisher per node:
// with go-control-plane's ADS rule, or without it for publish.SnapshotCacheNoADS.
func (st *state) snapshotCache(o Options, kind publish.Cache) error {
	sc := publish.NewSnapshotCache(nil)
	if kind == publish.SnapshotCacheNoADS {
		sc = publish.NewSnapshotCacheNoADS(nil)
	}
	for _, n := range st.nodes {
		sp, err := publish.NewPublisher(publish.PublisherConfig{Cache: sc, NodeID: n, Recorder: o.Recorder, Strategy: o.Versions, PerNode: st.perNode})
		if err != nil {
			return err
		}
		st.pubs[n] = sp
	}
	st.cache = sc
	return nil
}

// newTransport is o.Mode's transport serving st's cache until ctx is done; under the
// revert policy it reports NACKs to onNack.
func newTransport(ctx context.Context, o Options, st *state, onNack func(sotw.Nack)) (frontend.FrontEnd, error) {
	if o.Mode == protocol.Delta {
		return delta.New(ctx, delta.Config{Cache: st.cache, Recorder: o.Recorder, Describe: st.pub.Describe})
	}
	cfg := sotw.Config{Cache: st.cache, Recorder: o.Recorder, NackPolicy: st.policy, Describe: st.pub.Describe}
	if st.revert(o.Mode) {
		cfg.OnNack = onNack
	}
	return sotw.New(ctx, cfg)
}

// parseListenAddr accepts 127.0.0.1:PORT (or localhost:PORT) with PORT 0..65535 (0:
// pick a free port).
func parseListenAddr(addr string) (int, error) { return loopback.ParseListenAddr(addr) }

// Addr returns the address served, 127.0.0.1:PORT after Start ("" before Serve).
func (c *ControlPlane) Addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// Port returns the port served (0 before Serve, or on a listener not on TCP).
func (c *ControlPlane) Port() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.port
}

// FrontEnd returns the transport being served.
func (c *ControlPlane) FrontEnd() frontend.FrontEnd { return c.fe }

// PublisherFor returns the publisher of one node's state (nil for a node not served one).
// Without Options.Nodes the one node is Options.NodeID as given ("" for the default).
func (c *ControlPlane) PublisherFor(node string) publish.StatePublisher { return c.pubs[node] }

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
func (c *ControlPlane) Publisher() publish.StatePublisher { return c.pub }

// Cache returns the library cache served.
func (c *ControlPlane) Cache() publish.Cache { return c.cache }

// newPerTypePublisher is the publisher of a cache that versions each type itself, and
// the cache it feeds.
func newPerTypePublisher(kind publish.Cache, cfg publish.LinearConfig) (publish.StatePublisher, cachev3.Cache) {
	if kind == publish.IndexedCache {
		p := publish.NewIndexedPublisher(cfg)
		return p, p.Cache()
	}
	p := publish.NewLinearPublisher(cfg)
	return p, p.Cache()
}

// The refusals CheckCacheOptions wraps, one per SotW option that only the snapshot cache
// honours. A caller that words the refusal for its own flags (lab's --sotw-versions,
// --nack-policy) matches them with errors.Is, so the rule itself lives here alone.
var (
	ErrUniformNeedsSnapshot = errors.New("version strategy uniform needs the snapshot cache")
	ErrResendNeedsSnapshot  = errors.New("NACK policy resend needs the snapshot cache")
	ErrBackoffNeedsSnapshot = errors.New("NACK policy backoff needs the snapshot cache")
)

// CheckCacheOptions refuses the SotW options a cache cannot honour, in one line saying
// why; the error wraps ErrUniformNeedsSnapshot, ErrResendNeedsSnapshot or
// ErrBackoffNeedsSnapshot. Empty values are the defaults and always pass (with the
// LinearCache and the indexed cache they mean per-type versions and hold; hold and revert
// are served with every cache). The indexed cache mirrors the LinearCache, so it honours
// what the LinearCache honours and refuses the rest for the same reasons. Both
// SnapshotCaches (publish.SnapshotCache, publish.SnapshotCacheNoADS) honour every option:
// the ADS rule changes which requests are answered, not how versions move or what a NACK
// re-sends.
func CheckCacheOptions(cache publish.Cache, mode protocol.Mode, versions publish.VersionStrategy, policy sotw.NackPolicy) error {
	if !cache.VersionsPerType() || mode != protocol.SotW {
		return nil
	}
	if versions == publish.Uniform {
		return fmt.Errorf("%w: each LinearCache (and the indexed cache) versions its own type (per-type is what it does)", ErrUniformNeedsSnapshot)
	}
	if policy == sotw.Resend {
		return fmt.Errorf("%w: a LinearCache (and the indexed cache) tracks what it sent, not what was ACKed, so it never re-sends a rejected response (hold is what it does)", ErrResendNeedsSnapshot)
	}
	if policy == sotw.Backoff {
		return fmt.Errorf("%w: a LinearCache (and the indexed cache) never re-sends a rejected response, so there is no re-send to delay (hold is what it does)", ErrBackoffNeedsSnapshot)
	}
	return nil
}

// SotWDefaults is what a cache does in SotW when the version strategy and the NACK
// policy are left unset: uniform labels and resend with the snapshot cache, per-type
// versions and hold with the caches that version each type themselves.
func SotWDefaults(cache publish.Cache) (publish.VersionStrategy, sotw.NackPolicy) {
	if cache.VersionsPerType() {
		return publish.PerType, sotw.Hold
	}
	return publish.Uniform, sotw.Resend
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
		served := c.served
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
		if served {
			<-c.serveDone
		}
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
