// Package simclient is a simulated Envoy: an ADS client for either protocol that
// subscribes the way Envoy does (LDS and CDS as wildcard, RDS and EDS by the names the
// listeners and clusters reference), validates every resource, ACKs or NACKs, keeps
// per-resource versions across reconnects, and answers "which endpoint would this request
// reach" from what it accepted, routing like Envoy for the common cases (route.go). Its
// data plane is simulated and always labelled so.
package simclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// Entry is one accepted resource.
type Entry struct {
	Version  string
	Hash     string
	Resource types.Resource
}

// Counters count the client's answers per type.
type Counters struct {
	Responses int
	Acks      int
	Nacks     int
}

// State is a copy of what the client runs.
type State struct {
	Accepted map[resources.Type]map[string]Entry
	// VersionInfo is the last accepted SotW version_info (delta: system_version_info).
	VersionInfo map[resources.Type]string
	Counters    map[resources.Type]Counters
	// LastNonce is the nonce of the last response received per type on this stream.
	LastNonce map[resources.Type]string
	// LastError is the last NACK message per type.
	LastError map[resources.Type]string
	Connected bool
}

// Version returns the accepted version of one resource ("" when absent).
func (s State) Version(t resources.Type, name string) string { return s.Accepted[t][name].Version }

// Client is a simulated Envoy. Its accepted state survives reconnects (Run may be called
// again), as Envoy's does.
type Client struct {
	mode   protocol.Mode
	nodeID string

	mu       sync.Mutex
	state    State
	subs     map[resources.Type][]string // current RDS/EDS subscriptions
	changed  chan struct{}
	received []Received
	// active is the assignment each EDS cluster last routed with (see
	// rememberEndpointsLocked); like Accepted it survives reconnects.
	active map[string]*endpoint.ClusterLoadAssignment
	// byService names the accepted EDS clusters of each assignment name, so that an EDS
	// response updates only its own clusters (rebuilt with every LDS or CDS response).
	byService map[string][]string
	// reject, when set, makes the client NACK a valid response it says yes to
	// (SetRejecter).
	reject func(resources.Type) bool
	// stalled is closed by StopReading.
	stalled  chan struct{}
	stopOnce sync.Once
}

// Received is one response as the client saw it (tests read these).
type Received struct {
	Type      resources.Type
	Nonce     string
	Version   string
	Names     []string
	Removed   []string
	Acked     bool
	ErrorText string
}

// New returns a client for mode ("sotw" or "delta") identifying as nodeID.
func New(mode protocol.Mode, nodeID string) (*Client, error) {
	if err := mode.Check(); err != nil {
		return nil, fmt.Errorf("simulated client: %w", err)
	}
	if nodeID == "" {
		nodeID = resources.NodeID
	}
	c := &Client{mode: mode, nodeID: nodeID, changed: make(chan struct{}), stalled: make(chan struct{}), subs: map[resources.Type][]string{}, active: map[string]*endpoint.ClusterLoadAssignment{}, byService: map[string][]string{}}
	c.state = State{
		Accepted:    map[resources.Type]map[string]Entry{},
		VersionInfo: map[resources.Type]string{},
		Counters:    map[resources.Type]Counters{},
		LastNonce:   map[resources.Type]string{},
		LastError:   map[resources.Type]string{},
	}
	for _, t := range resources.Types {
		c.state.Accepted[t] = map[string]Entry{}
	}
	return c, nil
}

// ErrRejected is the validation error of a response the client's rejecter refused
// (SetRejecter): its NACK's error_detail.
var ErrRejected = errors.New("rejected by the simulated client's rejecter")

// SetRejecter makes the client NACK, besides every invalid response, each valid one of
// type t for which reject(t) says true, as a client that cannot apply a config would (a
// churn soak NACKs a fraction of responses this way; only invalid resources make a
// simulated client NACK otherwise). A rejected response is handled as an invalid one:
// nothing of it is accepted. Call it before Run; reject runs under the client's lock and
// must be quick.
func (c *Client) SetRejecter(reject func(t resources.Type) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reject = reject
}

// rejectLocked is the response's validation error: verr, or ErrRejected when the
// response is valid and the rejecter refuses it.
func (c *Client) rejectLocked(t resources.Type, verr error) error {
	if verr == nil && c.reject != nil && c.reject(t) {
		return ErrRejected
	}
	return verr
}

// StopReading makes the client a stuck one: after the response it is waiting for (read
// and answered as usual), it reads nothing more until Run's context ends, so responses
// pile up in its HTTP/2 receive window and then in the server's (bench --stuck-clients,
// docs/reliability.md "A stuck client").
func (c *Client) StopReading() { c.stopOnce.Do(func() { close(c.stalled) }) }

// Mode returns the client's protocol.
func (c *Client) Mode() protocol.Mode { return c.mode }

// State returns a deep copy of what the client runs now.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.copyLocked()
}

func (c *Client) copyLocked() State {
	s := State{
		Accepted:    map[resources.Type]map[string]Entry{},
		VersionInfo: maps.Clone(c.state.VersionInfo),
		Counters:    maps.Clone(c.state.Counters),
		LastNonce:   maps.Clone(c.state.LastNonce),
		LastError:   maps.Clone(c.state.LastError),
		Connected:   c.state.Connected,
	}
	for t, m := range c.state.Accepted {
		s.Accepted[t] = maps.Clone(m)
	}
	return s
}

// Received returns every response received so far, in order.
func (c *Client) Received() []Received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.received)
}

// WaitFor blocks until cond holds for the client's state or ctx ends.
func (c *Client) WaitFor(ctx context.Context, cond func(State) bool) (State, error) {
	for {
		c.mu.Lock()
		s := c.copyLocked()
		ch := c.changed
		c.mu.Unlock()
		if cond(s) {
			return s, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s, fmt.Errorf("simulated client: condition not met: %w", ctx.Err())
		}
	}
}

func (c *Client) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Run opens one ADS stream on conn and processes responses until ctx ends or the stream
// breaks. It returns nil when ctx ended.
func (c *Client) Run(ctx context.Context, conn grpc.ClientConnInterface) error {
	client := discovery.NewAggregatedDiscoveryServiceClient(conn)
	c.mu.Lock()
	c.subs = map[resources.Type][]string{}
	c.state.LastNonce = map[resources.Type]string{}
	c.state.Connected = true
	c.notifyLocked()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.state.Connected = false
		c.notifyLocked()
		c.mu.Unlock()
	}()
	return RunMode(ctx, c.mode, client, c.runSotW, c.runDelta)
}

func (c *Client) node() *core.Node {
	return &core.Node{Id: c.nodeID, Cluster: "simulated"}
}

// validateAll validates every resource of a response; the first failure rejects all.
func decode(anys []*anypb.Any) ([]types.Resource, []string, []string, error) {
	out := make([]types.Resource, 0, len(anys))
	names := make([]string, 0, len(anys))
	hashes := make([]string, 0, len(anys))
	var firstErr error
	for _, a := range anys {
		m, err := a.UnmarshalNew()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("decode %s: %w", a.GetTypeUrl(), err)
		}
		r, ok := m.(types.Resource)
		if !ok {
			return nil, nil, nil, fmt.Errorf("decode %s: not a resource", a.GetTypeUrl())
		}
		name := cachev3.GetResourceName(r)
		if err := resources.Validate(r); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, r)
		names = append(names, name)
		hashes = append(hashes, cachev3.HashResource(a.GetValue()))
	}
	return out, names, hashes, firstErr
}

// httpConnectionManagers returns the HTTP connection managers of a listener, in filter
// chain order, the default filter chain last. A filter whose typed config is not an HCM
// (or is missing) is skipped, never an error: the listener was validated on accept.
func httpConnectionManagers(l *listener.Listener) []*hcm.HttpConnectionManager {
	chains := l.GetFilterChains()
	if d := l.GetDefaultFilterChain(); d != nil {
		chains = append(slices.Clip(chains), d)
	}
	var out []*hcm.HttpConnectionManager
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			tc := f.GetTypedConfig()
			if tc == nil {
				continue
			}
			m := &hcm.HttpConnectionManager{}
			if tc.UnmarshalTo(m) == nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// edsServiceName is the name an EDS cluster subscribes to: eds_cluster_config.service_name,
// or the cluster's own name when that is empty (as Envoy does).
func edsServiceName(cl *cluster.Cluster) string {
	if n := cl.GetEdsClusterConfig().GetServiceName(); n != "" {
		return n
	}
	return cl.GetName()
}

// isEDS reports whether cl is an EDS cluster (a custom cluster_type reads as STATIC).
func isEDS(cl *cluster.Cluster) bool {
	return cl.GetClusterType() == nil && cl.GetType() == cluster.Cluster_EDS
}

// references returns the RDS names every accepted listener's HTTP connection managers
// use and the EDS service names every accepted EDS cluster uses, sorted and deduplicated.
func referencesLocked(acc map[resources.Type]map[string]Entry) (rds, eds []string) {
	for _, e := range acc[resources.LDS] {
		l, ok := e.Resource.(*listener.Listener)
		if !ok {
			continue
		}
		for _, m := range httpConnectionManagers(l) {
			if n := m.GetRds().GetRouteConfigName(); n != "" {
				rds = append(rds, n)
			}
		}
	}
	for _, e := range acc[resources.CDS] {
		cl, ok := e.Resource.(*cluster.Cluster)
		if !ok || !isEDS(cl) {
			continue
		}
		if n := edsServiceName(cl); n != "" {
			eds = append(eds, n)
		}
	}
	sort.Strings(rds)
	sort.Strings(eds)
	return slices.Compact(rds), slices.Compact(eds)
}

// rememberEndpointsLocked records, for every accepted EDS cluster whose assignment is
// accepted, that assignment as the cluster's active endpoints, and forgets the clusters
// that are gone or no longer EDS. Envoy keeps serving an updated cluster from its old
// version while the new one warms (waits for its assignment): when a cluster changes
// service_name, the new name has no assignment yet (and delta drops the old one), so
// routing falls back to what is remembered here. A cluster that was never active has
// nothing remembered and stays unroutable (NC) until its assignment arrives.
func (c *Client) rememberEndpointsLocked() {
	acc := c.state.Accepted
	c.byService = map[string][]string{}
	for name := range c.active {
		if cl, ok := acc[resources.CDS][name].Resource.(*cluster.Cluster); !ok || !isEDS(cl) {
			delete(c.active, name)
		}
	}
	for name, e := range acc[resources.CDS] {
		cl, ok := e.Resource.(*cluster.Cluster)
		if !ok || !isEDS(cl) {
			continue
		}
		c.byService[edsServiceName(cl)] = append(c.byService[edsServiceName(cl)], name)
		if cla, ok := acc[resources.EDS][edsServiceName(cl)].Resource.(*endpoint.ClusterLoadAssignment); ok && cla != nil {
			c.active[name] = cla
		}
	}
}

// afterAcceptLocked updates what derives from the accepted state after a response of
// type t that carried names, and says whether the subscriptions may have changed. Only
// listeners and clusters change which routes and assignments are referenced and which
// assignment a cluster routes with: they take the whole walk. An assignment changes only
// the active endpoints of its own clusters; routes and virtual hosts change neither. So
// the client's work per response is O(what it carried) except for LDS and CDS, as
// Envoy's own EDS update is per cluster.
func (c *Client) afterAcceptLocked(t resources.Type, names []string) (resubscribe bool) {
	switch t {
	case resources.LDS, resources.CDS:
		c.rememberEndpointsLocked()
		return true
	case resources.EDS:
		for _, n := range names {
			cla, ok := c.state.Accepted[resources.EDS][n].Resource.(*endpoint.ClusterLoadAssignment)
			if !ok || cla == nil {
				continue
			}
			for _, cl := range c.byService[n] {
				c.active[cl] = cla
			}
		}
	}
	return false
}

// ---- SotW ----

func (c *Client) runSotW(ctx context.Context, client discovery.AggregatedDiscoveryServiceClient) error {
	stream, err := client.StreamAggregatedResources(ctx)
	if err != nil {
		return fmt.Errorf("open SotW stream: %w", err)
	}
	c.mu.Lock()
	first := []*discovery.DiscoveryRequest{
		// Wildcard, resuming from the last accepted version after a reconnect.
		{Node: c.node(), TypeUrl: resources.CDS.URL(), VersionInfo: c.state.VersionInfo[resources.CDS]},
		{TypeUrl: resources.LDS.URL(), VersionInfo: c.state.VersionInfo[resources.LDS]},
	}
	c.mu.Unlock()
	return exchange(stream, c.stalled, "SotW", "request", first, c.handleSotW)
}

func (c *Client) handleSotW(resp *discovery.DiscoveryResponse) []*discovery.DiscoveryRequest {
	t, ok := resources.TypeOf(resp.GetTypeUrl())
	if !ok {
		return nil
	}
	decoded, names, hashes, verr := decode(resp.GetResources())
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notifyLocked()
	verr = c.rejectLocked(t, verr)
	c.state.LastNonce[t] = resp.GetNonce()
	c.recordLocked(Received{Type: t, Nonce: resp.GetNonce(), Version: resp.GetVersionInfo(), Names: names}, verr)
	ack := &discovery.DiscoveryRequest{TypeUrl: t.URL(), ResponseNonce: resp.GetNonce(), ResourceNames: c.subs[t]}
	if verr != nil {
		// A SotW NACK reports the last accepted version, never the rejected one.
		ack.VersionInfo = c.state.VersionInfo[t]
		ack.ErrorDetail = &status.Status{Code: int32(codes.InvalidArgument), Message: verr.Error()}
		return []*discovery.DiscoveryRequest{ack}
	}
	// LDS and CDS responses are the full set: absence is removal. RDS and EDS absence
	// removes nothing (Envoy keeps them until the listener or cluster goes).
	if t == resources.LDS || t == resources.CDS {
		c.state.Accepted[t] = map[string]Entry{}
	}
	for i, r := range decoded {
		c.state.Accepted[t][names[i]] = Entry{Version: resp.GetVersionInfo(), Hash: hashes[i], Resource: r}
	}
	c.state.VersionInfo[t] = resp.GetVersionInfo()
	ack.VersionInfo = resp.GetVersionInfo()
	out := []*discovery.DiscoveryRequest{ack}
	if !c.afterAcceptLocked(t, names) {
		return out
	}
	return append(out, c.resubscribeSotWLocked()...)
}

// recordLocked counts a response of rec.Type as ACKed, or NACKed when verr (its
// validation error) is set, and keeps rec in the received log; both protocols count
// the same way.
func (c *Client) recordLocked(rec Received, verr error) {
	cnt := c.state.Counters[rec.Type]
	cnt.Responses++
	if verr != nil {
		cnt.Nacks++
		c.state.LastError[rec.Type] = verr.Error()
		rec.ErrorText = verr.Error()
	} else {
		cnt.Acks++
		rec.Acked = true
	}
	c.state.Counters[rec.Type] = cnt
	c.received = append(c.received, rec)
}

// subscriptionChange is a referenced-name set that differs from the current subscription.
type subscriptionChange struct {
	t          resources.Type
	names      []string
	add, drop  []string
	subscribed bool // the type was subscribed before
}

// changedSubscriptionsLocked compares the RDS and EDS names the accepted listeners and
// clusters reference with the current subscriptions, records the new ones, and returns
// what changed. Both protocols resubscribe from it; they differ only in the request.
func (c *Client) changedSubscriptionsLocked() []subscriptionChange {
	rds, eds := referencesLocked(c.state.Accepted)
	var out []subscriptionChange
	for _, x := range []struct {
		t     resources.Type
		names []string
	}{{resources.EDS, eds}, {resources.RDS, rds}} {
		cur, subscribed := c.subs[x.t]
		if (subscribed && slices.Equal(cur, x.names)) || (!subscribed && len(x.names) == 0) {
			continue
		}
		ch := subscriptionChange{t: x.t, names: x.names, subscribed: subscribed}
		for _, n := range x.names {
			if !slices.Contains(cur, n) {
				ch.add = append(ch.add, n)
			}
		}
		for _, n := range cur {
			if !slices.Contains(x.names, n) {
				ch.drop = append(ch.drop, n)
			}
		}
		c.subs[x.t] = x.names
		out = append(out, ch)
	}
	return out
}

// resubscribeSotWLocked sends RDS/EDS requests when the referenced names changed. A
// resubscription carries the last nonce and version of its type, as Envoy's does, or the
// server would treat it as stale.
func (c *Client) resubscribeSotWLocked() []*discovery.DiscoveryRequest {
	var out []*discovery.DiscoveryRequest
	for _, ch := range c.changedSubscriptionsLocked() {
		names := ch.names
		if names == nil {
			names = []string{}
		}
		out = append(out, &discovery.DiscoveryRequest{
			TypeUrl:       ch.t.URL(),
			ResourceNames: names,
			VersionInfo:   c.state.VersionInfo[ch.t],
			ResponseNonce: c.state.LastNonce[ch.t],
		})
	}
	return out
}

// ---- delta ----

func (c *Client) runDelta(ctx context.Context, client discovery.AggregatedDiscoveryServiceClient) error {
	stream, err := client.DeltaAggregatedResources(ctx)
	if err != nil {
		return fmt.Errorf("open delta stream: %w", err)
	}
	c.mu.Lock()
	first := []*discovery.DeltaDiscoveryRequest{
		// Legacy wildcard (no names) with every known name -> version, as Envoy sends on
		// a reconnect.
		{Node: c.node(), TypeUrl: resources.CDS.URL(), InitialResourceVersions: c.versionsLocked(resources.CDS)},
		{TypeUrl: resources.LDS.URL(), InitialResourceVersions: c.versionsLocked(resources.LDS)},
	}
	c.mu.Unlock()
	return exchange(stream, c.stalled, "delta", "delta request", first, c.handleDelta)
}

func (c *Client) versionsLocked(t resources.Type) map[string]string {
	if len(c.state.Accepted[t]) == 0 {
		return nil
	}
	out := make(map[string]string, len(c.state.Accepted[t]))
	for n, e := range c.state.Accepted[t] {
		out[n] = e.Version
	}
	return out
}

func (c *Client) handleDelta(resp *discovery.DeltaDiscoveryResponse) []*discovery.DeltaDiscoveryRequest {
	t, ok := resources.TypeOf(resp.GetTypeUrl())
	if !ok {
		return nil
	}
	anys := make([]*anypb.Any, len(resp.GetResources()))
	for i, r := range resp.GetResources() {
		anys[i] = r.GetResource()
	}
	decoded, names, hashes, verr := decode(anys)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notifyLocked()
	verr = c.rejectLocked(t, verr)
	c.state.LastNonce[t] = resp.GetNonce()
	c.recordLocked(Received{Type: t, Nonce: resp.GetNonce(), Version: resp.GetSystemVersionInfo(), Names: names, Removed: resp.GetRemovedResources()}, verr)
	ack := &discovery.DeltaDiscoveryRequest{TypeUrl: t.URL(), ResponseNonce: resp.GetNonce()}
	if verr != nil {
		// A delta NACK accepts none of the response's resources.
		ack.ErrorDetail = &status.Status{Code: int32(codes.InvalidArgument), Message: verr.Error()}
		return []*discovery.DeltaDiscoveryRequest{ack}
	}
	for i, r := range resp.GetResources() {
		c.state.Accepted[t][names[i]] = Entry{Version: r.GetVersion(), Hash: hashes[i], Resource: decoded[i]}
	}
	// Like Envoy: removals take effect for listeners and clusters; a route or endpoint
	// removal is ignored (they go away with their listener or cluster).
	if t == resources.LDS || t == resources.CDS {
		for _, n := range resp.GetRemovedResources() {
			delete(c.state.Accepted[t], n)
		}
	}
	c.state.VersionInfo[t] = resp.GetSystemVersionInfo()
	out := []*discovery.DeltaDiscoveryRequest{ack}
	if !c.afterAcceptLocked(t, names) {
		return out
	}
	return append(out, c.resubscribeDeltaLocked()...)
}

// resubscribeDeltaLocked sends the names to add and drop; the first request of a type
// carries what the client already has (initial_resource_versions).
func (c *Client) resubscribeDeltaLocked() []*discovery.DeltaDiscoveryRequest {
	var out []*discovery.DeltaDiscoveryRequest
	for _, ch := range c.changedSubscriptionsLocked() {
		req := &discovery.DeltaDiscoveryRequest{TypeUrl: ch.t.URL(), ResourceNamesSubscribe: ch.add, ResourceNamesUnsubscribe: ch.drop}
		if !ch.subscribed {
			req.InitialResourceVersions = c.versionsLocked(ch.t)
		}
		for _, n := range ch.drop {
			delete(c.state.Accepted[ch.t], n)
		}
		out = append(out, req)
	}
	return out
}
