// Package resources turns the workbench's desired state into the four xDS resources
// Envoy needs (listener, route configuration, EDS clusters, endpoints) and validates
// them before anything is published. It is mode-agnostic: the SotW and delta front ends
// publish exactly the same resources.
//
// A Set holds each type's resources in a persistent List (list.go). A published set
// never changes, and the set it was rebuilt from stays readable (the runner compares
// with it, the reverting publisher takes resources back from it), so Rebuild cannot
// edit in place; with a flat slice per type, one endpoint change copied all N resource
// headers (640 kB at N = 10,000). A List is chunked and copy-on-write: a change copies
// the chunks it touches and the chunk pointers, and shares the rest with its parent.
package resources

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/loopback"
)

// Names of the teaching resources. The scaled (bench) state names clusters
// inventory-0000 ... inventory-<N-1>.
const (
	NodeID          = "teaching-envoy"
	ListenerName    = "quote-listener"
	RouteName       = "quote-route"
	ClusterName     = "inventory"
	QuotePath       = "/quote"
	StatPrefix      = "quote"
	DefaultListener = 19000
)

// AccessLogFormat is the text access-log format the listener writes: space-separated,
// request ID first, so the runner can find the line for one request. A text format is
// used on purpose: a JSON format is a protobuf Struct (a map), whose Any encoding is not
// deterministic and would give spurious content hashes.
const AccessLogFormat = "%START_TIME% %REQ(X-REQUEST-ID)% %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %UPSTREAM_HOST% %UPSTREAM_CLUSTER%\n"

// Type is the short name of an xDS resource type as it appears in xds.log.
type Type string

const (
	LDS Type = "LDS"
	RDS Type = "RDS"
	CDS Type = "CDS"
	EDS Type = "EDS"
	// VHDS is the VirtualHost type (envoy.config.route.v3.VirtualHost): a route
	// configuration's virtual hosts served one by one, on demand (ondemand.go).
	VHDS Type = "VHDS"
	// SDS is the Secret type (envoy.extensions.transport_sockets.tls.v3.Secret): a TLS
	// listener's certificate, fetched by name over ADS (secret.go).
	SDS Type = "SDS"
)

// Types lists the types in ADS push order (CDS before EDS, LDS before RDS, a route
// configuration before its virtual hosts), then the secrets a listener or cluster
// fetches by name (SDS).
var Types = []Type{CDS, EDS, LDS, RDS, VHDS, SDS}

// CoreTypes are the four types of every state, in Types order; VHDS is only in the
// on-demand shape.
var CoreTypes = Types[:4]

// URL returns the type URL of t.
func (t Type) URL() string {
	switch t {
	case LDS:
		return rsrc.ListenerType
	case RDS:
		return rsrc.RouteType
	case CDS:
		return rsrc.ClusterType
	case EDS:
		return rsrc.EndpointType
	case VHDS:
		return rsrc.VirtualHostType
	case SDS:
		return rsrc.SecretType
	}
	return ""
}

// TypeOf maps a type URL to its short name; ok is false for any other type.
func TypeOf(url string) (Type, bool) {
	switch url {
	case rsrc.ListenerType:
		return LDS, true
	case rsrc.RouteType:
		return RDS, true
	case rsrc.ClusterType:
		return CDS, true
	case rsrc.EndpointType:
		return EDS, true
	case rsrc.VirtualHostType:
		return VHDS, true
	case rsrc.SecretType:
		return SDS, true
	}
	return "", false
}

// State is the desired state: what the control plane wants Envoy to run.
type State struct {
	// Version is the label published with this state ("1", "2", ...).
	Version string
	// ListenerPort is Envoy's listener port (DefaultListener when 0).
	ListenerPort int
	// InventoryPort is the endpoint port of cluster "inventory" (teaching state) and the
	// default endpoint port of every cluster in the scaled state.
	InventoryPort int
	// InvalidRoute publishes a route whose match has no path specifier: it passes
	// Snapshot.Consistent but fails ValidateAll, so that the client's NACK can be seen.
	InvalidRoute bool
	// InventoryRemoved leaves out the cluster(s) and their endpoints; the route still
	// points at them, so Envoy answers 503 NC.
	InventoryRemoved bool
	// AccessLogPath, when set, makes the listener write AccessLogFormat lines there.
	AccessLogPath string
	// Clusters > 0 selects the scaled state with that many clusters (lab bench).
	Clusters int
	// EndpointPorts overrides the endpoint port of scaled cluster i.
	EndpointPorts map[int]int
	// UnlistedEmpty gives every scaled cluster without an EndpointPorts entry no
	// endpoint at all (an empty ClusterLoadAssignment) instead of one at InventoryPort.
	// Envoy never connects to a cluster no request uses, so for it the two are alike;
	// grpc-go's round_robin connects to every endpoint of every cluster the route names
	// at once and keeps reconnecting to a dead one (lab bench --unprobed).
	UnlistedEmpty bool
	// RouteTargets points route i of the scaled state (path /quote/<i>) at cluster
	// RouteTargets[i] instead of cluster i.
	RouteTargets map[int]int
	// ServerName, when set, is the HTTP connection manager's server_name: the value of the
	// "server" header Envoy writes on every response (default "envoy"). It is the one
	// listener setting a change of which the data plane shows.
	ServerName string
	// OnDemand serves the state's routes through VHDS (one virtual host per service,
	// Host ServiceHost(i), or QuoteHost in the teaching state) and/or its clusters through
	// on-demand CDS (ondemand.go). Delta only; InvalidRoute is not built in this shape.
	OnDemand OnDemand
	// Proxyless builds the listener for a proxyless gRPC client (grpc-go): an
	// api_listener holding the same HTTP connection manager (RDS over ADS, the router),
	// with no address, no access log and nothing on demand. Routes, clusters and
	// endpoints are the same resources either way. The client subscribes to the listener
	// named by its target's host, so it dials ProxylessTarget.
	Proxyless bool
	// TLS, when TLS.Secret is set, makes the listener terminate TLS with the certificate
	// of that SDS secret, fetched over ADS; Secrets are the secrets the state publishes.
	TLS     ListenerTLS
	Secrets []SecretSpec
}

// ProxylessTarget is what a proxyless client dials: grpc-go's xDS resolver subscribes to
// the listener named by the target's host (xds/internal/resolver: the LDS resource name
// is the target's endpoint when the bootstrap has no client_default_listener_resource_name_template),
// so the listener keeps its name and both clients are served the same names.
const ProxylessTarget = "xds:///" + ListenerName

// QuoteHost is the Host of the teaching state's one virtual host when routes are on
// demand (VHDS): Envoy subscribes to "quote-route/quote".
const QuoteHost = "quote"

// Resource is one built resource with its name and content hash (the library's delta
// version: SHA-256 of the deterministic marshal).
type Resource struct {
	Type     Type
	Name     string
	Hash     string
	Resource types.Resource
}

// Set is a desired state turned into validated resources, ready to publish.
type Set struct {
	Version string
	// ByType holds each type's resources in order. Its lists are persistent (List): a
	// set rebuilt from this one shares all but the chunks it changed.
	ByType map[Type]List
	// Invalid names the resources that deliberately fail validation (the invalid route).
	Invalid []string

	// state is what the set was built from; id numbers it; parent and change, for a set
	// made by Rebuild, name the set it was rebuilt from and what differs from it.
	state  State
	id     uint64
	parent uint64
	change *Change
	// lenient sets (NewSet) may reference resources they do not hold; Snapshot does not
	// require them to be consistent.
	lenient bool

	// names indexes ByType by name for Has, built on its first call (a set is not
	// changed once published); a pointer, so a copy of a set shares it.
	names *nameIndex
}

// nameIndex is a set's names per type, built once.
type nameIndex struct {
	once sync.Once
	m    map[Type]map[string]struct{}
}

// ClusterNames returns the cluster names of a state, in order.
func ClusterNames(s State) []string {
	if s.Clusters <= 0 {
		return []string{ClusterName}
	}
	names := make([]string, s.Clusters)
	for i := range names {
		names[i] = ScaledClusterName(i)
	}
	return names
}

// ScaledClusterName is the name of cluster i in the scaled state.
func ScaledClusterName(i int) string { return fmt.Sprintf(ScaledClusterPrefix+"%04d", i) }

// ScaledClusterPrefix begins the name of every scaled cluster (ScaledClusterName).
const ScaledClusterPrefix = "inventory-"

// ScaledPath is the route path of cluster i in the scaled state.
func ScaledPath(i int) string { return fmt.Sprintf("%s/%d", QuotePath, i) }

// Build validates s and builds its resources. Every resource passes ValidateAll except
// the deliberately invalid route; the snapshot made from them passes Consistent.
func Build(s State) (*Set, error) {
	s, err := checkState(s)
	if err != nil {
		return nil, err
	}
	set := &Set{Version: s.Version, ByType: map[Type]List{}, state: s, id: setIDs.Add(1), names: &nameIndex{}}
	byType := map[Type][]Resource{}
	add := func(t Type, name string, r types.Resource, mustValidate bool) error {
		res, err := builtResource(s.Version, t, name, r, mustValidate)
		if err != nil {
			return err
		}
		byType[t] = append(byType[t], res)
		return nil
	}

	l, err := buildListener(s)
	if err != nil {
		return nil, fmt.Errorf("build version %s: %w", s.Version, err)
	}
	if err := add(LDS, ListenerName, l, true); err != nil {
		return nil, err
	}
	rc := buildRoute(s)
	if s.OnDemand.VirtualHosts {
		rc = vhdsRouteConfig(RouteName)
		for i := range max(s.Clusters, 1) {
			vh := buildVirtualHost(s, i)
			if err := add(VHDS, vh.GetName(), vh, true); err != nil {
				return nil, err
			}
		}
	}
	if s.InvalidRoute {
		// The one deliberate exception: prove it is invalid (so the NACK is certain), then
		// publish it anyway.
		if validate(rc) == nil {
			return nil, fmt.Errorf("build version %s: the invalid route unexpectedly validates", s.Version)
		}
		set.Invalid = append(set.Invalid, RouteName)
	}
	if err := add(RDS, RouteName, rc, !s.InvalidRoute); err != nil {
		return nil, err
	}
	if !s.InventoryRemoved {
		for i, name := range ClusterNames(s) {
			if err := add(CDS, name, buildCluster(name), true); err != nil {
				return nil, err
			}
			if err := add(EDS, name, buildEndpoints(name, endpointPort(s, i)), true); err != nil {
				return nil, err
			}
		}
	}
	for _, sec := range s.Secrets {
		m, err := BuildSecret(sec)
		if err != nil {
			return nil, fmt.Errorf("build version %s: %w", s.Version, err)
		}
		if err := add(SDS, sec.Name, m, !sec.Invalid); err != nil {
			return nil, err
		}
		if sec.Invalid {
			set.Invalid = append(set.Invalid, sec.Name)
		}
	}
	for t, rs := range byType {
		set.ByType[t] = ListOf(rs...)
	}
	if err := checkVirtualHosts(s.Version, set); err != nil {
		return nil, err
	}
	if _, err := set.Snapshot(UniformVersions(s.Version)); err != nil {
		return nil, fmt.Errorf("build version %s: %w", s.Version, err)
	}
	return set, nil
}

// checkState validates s and returns it with defaults filled and its maps copied (a set
// keeps the state it was built from, for Rebuild, and the caller may reuse its maps).
func checkState(s State) (State, error) {
	if s.Version == "" {
		return s, fmt.Errorf("build state: empty version label")
	}
	if s.ListenerPort == 0 {
		s.ListenerPort = DefaultListener
	}
	if err := loopback.ValidatePort(s.ListenerPort); err != nil {
		return s, fmt.Errorf("build version %s: listener: %w", s.Version, err)
	}
	if err := loopback.ValidatePort(s.InventoryPort); err != nil {
		return s, fmt.Errorf("build version %s: inventory endpoint: %w", s.Version, err)
	}
	if s.Clusters < 0 {
		return s, fmt.Errorf("build version %s: negative cluster count %d", s.Version, s.Clusters)
	}
	if s.UnlistedEmpty && s.Clusters == 0 {
		return s, fmt.Errorf("build version %s: empty unlisted clusters need the scaled state (clusters > 0)", s.Version)
	}
	if s.Proxyless && s.OnDemand.Any() {
		return s, fmt.Errorf("build version %s: on-demand xDS needs Envoy's on_demand filter; a proxyless listener has none", s.Version)
	}
	if s.Proxyless && s.AccessLogPath != "" {
		return s, fmt.Errorf("build version %s: a proxyless listener writes no access log", s.Version)
	}
	if s.Proxyless && s.TLS.Secret != "" {
		return s, fmt.Errorf("build version %s: %s", s.Version, ProxylessNoSDS)
	}
	s.Secrets = slices.Clone(s.Secrets)
	if s.OnDemand.VirtualHosts && s.InvalidRoute {
		return s, fmt.Errorf("build version %s: the invalid route is not built with routes on demand (VHDS)", s.Version)
	}
	for i, j := range s.RouteTargets {
		if s.Clusters <= 0 || i < 0 || i >= s.Clusters || j < 0 || j >= s.Clusters {
			return s, fmt.Errorf("build version %s: route %d -> cluster %d outside the scaled state", s.Version, i, j)
		}
	}
	for i, p := range s.EndpointPorts {
		if s.Clusters <= 0 || i < 0 || i >= s.Clusters {
			return s, fmt.Errorf("build version %s: endpoint override for cluster %d outside the scaled state", s.Version, i)
		}
		if err := loopback.ValidatePort(p); err != nil {
			return s, fmt.Errorf("build version %s: cluster %d endpoint: %w", s.Version, i, err)
		}
	}
	s.EndpointPorts, s.RouteTargets = maps.Clone(s.EndpointPorts), maps.Clone(s.RouteTargets)
	return s, nil
}

// builtResource validates (when asked) and hashes one freshly built resource.
func builtResource(version string, t Type, name string, r types.Resource, mustValidate bool) (Resource, error) {
	if mustValidate {
		if err := validate(r); err != nil {
			return Resource{}, fmt.Errorf("build version %s: %s %q: %w", version, t, name, err)
		}
	}
	h, err := Hash(r)
	if err != nil {
		return Resource{}, fmt.Errorf("build version %s: hash %s %q: %w", version, t, name, err)
	}
	return Resource{Type: t, Name: name, Hash: h, Resource: r}, nil
}

// UniformVersions gives every type the same version label.
func UniformVersions(v string) map[Type]string {
	out := make(map[Type]string, len(Types))
	for _, t := range Types {
		out[t] = v
	}
	return out
}

// Snapshot makes a library snapshot with the given per-type versions and checks it with
// Consistent. A type with no resources still gets its version, so that a SotW client sees
// an (empty) response when its last resource of that type goes away.
func (s *Set) Snapshot(versions map[Type]string) (*cachev3.Snapshot, error) {
	// VersionMap holds the delta per-resource versions. They are the hashes Build already
	// computed with the library's own function, so the library's ConstructVersionMap
	// (which re-marshals and re-hashes every resource: 150 ms at 10,000 clusters) returns
	// at once.
	snap := &cachev3.Snapshot{VersionMap: make(map[string]map[string]string, len(Types))}
	for _, t := range Types {
		v, ok := versions[t]
		if !ok {
			return nil, fmt.Errorf("snapshot: no version for %s", t)
		}
		items := make([]types.Resource, 0, s.ByType[t].Len())
		for _, r := range s.ByType[t].All() {
			items = append(items, r.Resource)
		}
		snap.Resources[cachev3.GetResponseType(t.URL())] = cachev3.NewResources(v, items)
		snap.VersionMap[t.URL()] = s.Hashes(t)
	}
	if s.lenient {
		return snap, nil
	}
	if s.state.Proxyless {
		if err := apiListenerConsistent(snap); err != nil {
			return nil, fmt.Errorf("snapshot is not consistent: %w", err)
		}
		return snap, nil
	}
	if err := snap.Consistent(); err != nil {
		return nil, fmt.Errorf("snapshot is not consistent: %w", err)
	}
	return snap, nil
}

// apiListenerConsistent is Snapshot.Consistent for the proxyless shape. The library's
// check collects a listener's route names from its filter chains only
// (pkg/cache/v3/resource.go, getListenerReferences), so it finds none in an api_listener
// and calls the route configuration unreferenced. This is the same check with the
// api_listener's route added: every route configuration and every assignment published
// is exactly the set the listeners and clusters name.
func apiListenerConsistent(snap *cachev3.Snapshot) error {
	refs := cachev3.GetAllResourceReferences(snap.Resources)
	routes := refs[rsrc.RouteType]
	if routes == nil {
		routes = map[string]bool{}
	}
	for _, r := range snap.Resources[types.Listener].Items {
		l, ok := r.Resource.(*listener.Listener)
		if !ok || l.GetApiListener() == nil {
			continue
		}
		m := &hcm.HttpConnectionManager{}
		if err := l.GetApiListener().GetApiListener().UnmarshalTo(m); err != nil {
			return fmt.Errorf("listener %s: api_listener: %w", l.GetName(), err)
		}
		if name := m.GetRds().GetRouteConfigName(); name != "" {
			routes[name] = true
		}
	}
	for _, c := range []struct {
		t    Type
		rt   types.ResponseType
		refs map[string]bool
	}{{RDS, types.Route, routes}, {EDS, types.Endpoint, refs[rsrc.EndpointType]}} {
		items := snap.Resources[c.rt].Items
		if len(items) != len(c.refs) {
			return fmt.Errorf("%s: %d referenced, %d published", c.t, len(c.refs), len(items))
		}
		for name := range items {
			if !c.refs[name] {
				return fmt.Errorf("%s %q is published but not referenced", c.t, name)
			}
		}
	}
	return nil
}

// Has reports whether the set holds a resource of type t named name. The first call
// indexes the set, O(resources); every later one is O(1) (publish.OnDemandCache asks it
// once per on-demand subscribe).
func (s *Set) Has(t Type, name string) bool {
	if s.names == nil {
		// Not made by Build, Rebuild or NewSet: look without an index.
		for _, r := range s.ByType[t].All() {
			if r.Name == name {
				return true
			}
		}
		return false
	}
	s.names.once.Do(func() {
		s.names.m = make(map[Type]map[string]struct{}, len(s.ByType))
		for typ, rs := range s.ByType {
			m := make(map[string]struct{}, rs.Len())
			for _, r := range rs.All() {
				m[r.Name] = struct{}{}
			}
			s.names.m[typ] = m
		}
	})
	_, ok := s.names.m[t][name]
	return ok
}

// Hashes returns name -> hash for type t.
func (s *Set) Hashes(t Type) map[string]string {
	out := make(map[string]string, s.ByType[t].Len())
	for _, r := range s.ByType[t].All() {
		out[r.Name] = r.Hash
	}
	return out
}

// ChangedTypes lists the types whose content differs between prev and s (the types s
// has when prev is nil), in Types order.
func (s *Set) ChangedTypes(prev *Set) []Type {
	return Diff(prev, s).Types()
}

// Describe says in a few words what changed from prev to s (for `lab serve`).
func (s *Set) Describe(prev *Set) string {
	c := Diff(prev, s)
	if c.Empty() {
		return "no content change"
	}
	var parts []string
	for _, t := range c.Types() {
		var names []string
		for _, e := range c.Edits {
			switch {
			case e.Type != t:
			case e.Old == nil:
				names = append(names, "+"+e.Name)
			case e.New == nil:
				names = append(names, "-"+e.Name)
			default:
				names = append(names, "~"+e.Name)
			}
		}
		slices.Sort(names)
		if len(names) > 3 {
			names = append(names[:3], fmt.Sprintf("... (%d more)", len(names)-3))
		}
		parts = append(parts, fmt.Sprintf("%s %s", t, strings.Join(names, " ")))
	}
	return strings.Join(parts, "; ")
}

// Hash is the library's delta version of a resource: hex SHA-256 of its deterministic
// marshal. The front ends record the same hash for what they send, computed from the
// bytes on the wire.
func Hash(r types.Resource) (string, error) {
	b, err := cachev3.MarshalResource(r)
	if err != nil {
		return "", err
	}
	return cachev3.HashResource(b), nil
}

// NameOnWire is the name of a resource as sent, read by decoding its bytes
// ("?undecodable" when they do not decode): how xds.log names content no publisher knows.
func NameOnWire(a *anypb.Any) string {
	m, err := a.UnmarshalNew()
	if err != nil {
		return "?undecodable"
	}
	return cachev3.GetResourceName(m)
}

// validator is what every generated Envoy message implements.
type validator interface{ ValidateAll() error }

func validate(r proto.Message) error {
	v, ok := r.(validator)
	if !ok {
		return fmt.Errorf("%T has no ValidateAll", r)
	}
	return v.ValidateAll()
}

// Validate runs ValidateAll on r and, for a listener, on every HTTP connection manager
// packed inside it (ValidateAll does not look inside an Any). Clients use it too.
func Validate(r types.Resource) error {
	if err := validate(r); err != nil {
		return err
	}
	if sec, ok := r.(*tlsv3.Secret); ok {
		return checkSecret(sec)
	}
	l, ok := r.(*listener.Listener)
	if !ok {
		return nil
	}
	if a := l.GetApiListener().GetApiListener(); a != nil {
		m, err := a.UnmarshalNew()
		if err != nil {
			return fmt.Errorf("api_listener: %w", err)
		}
		if err := validate(m); err != nil {
			return fmt.Errorf("api_listener: %w", err)
		}
	}
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			if f.GetTypedConfig() == nil {
				continue
			}
			m, err := f.GetTypedConfig().UnmarshalNew()
			if err != nil {
				return fmt.Errorf("filter %q: %w", f.GetName(), err)
			}
			if err := validate(m); err != nil {
				return fmt.Errorf("filter %q: %w", f.GetName(), err)
			}
		}
	}
	return nil
}
