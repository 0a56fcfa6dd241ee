package resources

import (
	"fmt"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	upstreamhttp "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcher "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-workbench/lab/shared/loopback"
)

// The short forms: the common resources of a scenario, described by what differs
// between them. Each builds the same resource the teaching state builds, so a scenario
// written with short forms runs exactly what Build publishes.

// ListenerSpec is an HTTP listener on loopback whose routes come from RDS over ADS.
type ListenerSpec struct {
	Name       string
	Port       int
	RouteName  string
	StatPrefix string // StatPrefix when empty
	// ServerName is the "server" header Envoy writes (default "envoy").
	ServerName string
	// AccessLogPath, when set, makes the listener write AccessLogFormat lines there.
	AccessLogPath string
	// OnDemand puts envoy.filters.http.on_demand before the router (with odcds when
	// clusters are on demand); ODCDSTimeout is its odcds timeout (DefaultODCDSTimeout
	// when 0).
	OnDemand     OnDemand
	ODCDSTimeout time.Duration
	// Proxyless makes it the listener of a proxyless gRPC client (State.Proxyless): the
	// same HTTP connection manager as the listener's api_listener, with no address. Port
	// is then unused; an access log or anything on demand is refused.
	Proxyless bool
	// TLS, when TLS.Secret is set, terminates TLS with that SDS secret's certificate
	// (secret.go); a proxyless listener cannot (ProxylessNoSDS).
	TLS ListenerTLS
	// BufferLimit, when not 0, is the listener's per_connection_buffer_limit_bytes: a
	// listener-level field, so changing it is a full listener update (the old listener
	// drains) rather than an in-place filter-chain update (Envoy's
	// ListenerImpl::supportUpdateFilterChain, ListenerMessageUtil::filterChainOnlyChange).
	BufferLimit uint32
}

// BuildListener builds the listener l describes.
func BuildListener(l ListenerSpec) (*listener.Listener, error) {
	if l.StatPrefix == "" {
		l.StatPrefix = StatPrefix
	}
	ln, err := listenerFor(l)
	if err != nil {
		return nil, err
	}
	if l.BufferLimit != 0 {
		if l.Proxyless {
			return nil, fmt.Errorf("listener %s: a proxyless listener has no connections to buffer (per_connection_buffer_limit_bytes)", l.Name)
		}
		ln.PerConnectionBufferLimitBytes = wrapperspb.UInt32(l.BufferLimit)
	}
	return ln, nil
}

// ClusterSpec is an EDS cluster whose endpoints come over ADS.
type ClusterSpec struct {
	Name string
	// ServiceName is the EDS resource the cluster subscribes to (the cluster name when
	// empty).
	ServiceName string
	// ConnectTimeout is 1s when 0.
	ConnectTimeout time.Duration
	// InitialFetchTimeout bounds the cluster's warming on EDS (Envoy's default 15s when 0).
	InitialFetchTimeout time.Duration
	// HTTP2 makes Envoy talk HTTP/2 to the endpoints (HttpProtocolOptions'
	// explicit_http_config); HTTP/1.1 otherwise. The inventory backends speak both.
	HTTP2 bool
	// HealthCheck, when its Path is set, is an active HTTP health check of every
	// endpoint: the cluster then warms until each host has had a first check
	// (upstream_impl.cc, ClusterImplBase::onInitDone).
	HealthCheck HealthCheckSpec
}

// HealthCheckSpec is an active HTTP health check: GET Path every Interval, failing after
// Timeout; one failure marks a host unhealthy and one success healthy.
type HealthCheckSpec struct {
	Path string
	// Interval is 1s when 0; Timeout is 1s when 0.
	Interval, Timeout time.Duration
}

// BuildCluster builds the cluster c describes.
func BuildCluster(c ClusterSpec) (*cluster.Cluster, error) {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = time.Second
	}
	src := adsSource()
	if c.InitialFetchTimeout > 0 {
		src.InitialFetchTimeout = durationpb.New(c.InitialFetchTimeout)
	}
	svc := c.ServiceName
	if svc == "" {
		svc = c.Name
	}
	cl := &cluster.Cluster{
		Name:                 c.Name,
		ConnectTimeout:       durationpb.New(c.ConnectTimeout),
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig:     &cluster.Cluster_EdsClusterConfig{EdsConfig: src, ServiceName: svc},
		LbPolicy:             cluster.Cluster_ROUND_ROBIN,
	}
	if c.HTTP2 {
		opts, err := deterministicAny(&upstreamhttp.HttpProtocolOptions{
			UpstreamProtocolOptions: &upstreamhttp.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &upstreamhttp.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &upstreamhttp.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &core.Http2ProtocolOptions{}},
			}},
		})
		if err != nil {
			return nil, fmt.Errorf("cluster %s: pack HttpProtocolOptions: %w", c.Name, err)
		}
		cl.TypedExtensionProtocolOptions = map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": opts}
	}
	if c.HealthCheck.Path != "" {
		cl.HealthChecks = []*core.HealthCheck{healthCheck(c.HealthCheck)}
	}
	return cl, nil
}

// healthCheck is the core.HealthCheck h describes.
func healthCheck(h HealthCheckSpec) *core.HealthCheck {
	interval, timeout := h.Interval, h.Timeout
	if interval == 0 {
		interval = time.Second
	}
	if timeout == 0 {
		timeout = time.Second
	}
	return &core.HealthCheck{
		Timeout:            durationpb.New(timeout),
		Interval:           durationpb.New(interval),
		UnhealthyThreshold: wrapperspb.UInt32(1),
		HealthyThreshold:   wrapperspb.UInt32(1),
		HealthChecker:      &core.HealthCheck_HttpHealthCheck_{HttpHealthCheck: &core.HealthCheck_HttpHealthCheck{Path: h.Path}},
	}
}

// BuildEndpoints is the assignment name with one loopback endpoint per port, in order.
func BuildEndpoints(name string, ports ...int) *endpoint.ClusterLoadAssignment {
	lbs := make([]*endpoint.LbEndpoint, len(ports))
	for i, p := range ports {
		lbs[i] = &endpoint.LbEndpoint{HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{
			Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
				Address:       loopback.Host,
				PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(p)},
			}}},
		}}}
	}
	cla := &endpoint.ClusterLoadAssignment{ClusterName: name}
	if len(lbs) > 0 {
		// An empty locality and weight 1, which Envoy treats as no locality (weights only
		// count under locality_weighted_lb_config), because grpc-go NACKs a locality
		// without an ID ("EDS response contains a locality without ID") and ignores one
		// of weight 0, i.e. unset (internal/xds/xdsclient/xdsresource/unmarshal_eds.go,
		// parseEDSRespProto). One shape serves both clients.
		cla.Endpoints = []*endpoint.LocalityLbEndpoints{{
			Locality:            &core.Locality{},
			LoadBalancingWeight: wrapperspb.UInt32(1),
			LbEndpoints:         lbs,
		}}
	}
	return cla
}

// RouteSpec is a route configuration with one virtual host matching every domain, or,
// with VHDS, one whose virtual hosts all come from VHDS (then Rules must be empty).
type RouteSpec struct {
	Name  string
	Rules []RouteRule
	VHDS  bool
}

// RouteRule is one route: a match and where it sends the request.
type RouteRule struct {
	// Name is the route's name (optional).
	Name string
	// Exactly one of Path (exact) and Prefix is set for a valid route; neither gives a
	// match without a path specifier, which fails validation (the teaching invalid route).
	Path, Prefix string
	Headers      []HeaderMatch
	// Exactly one of Cluster, Weighted and ClusterHeader: ClusterHeader names the request
	// header whose value is the cluster (route.RouteAction.cluster_header), which
	// on-demand CDS fetches on first use.
	Cluster       string
	Weighted      []WeightedCluster
	ClusterHeader string
}

// HeaderMatch matches a request header by exact value, or by presence when Exact is "".
type HeaderMatch struct {
	Name, Exact string
}

// WeightedCluster is one target of a weighted route.
type WeightedCluster struct {
	Cluster string
	Weight  uint32
}

// BuildRoute builds the route configuration r describes.
func BuildRoute(r RouteSpec) (*route.RouteConfiguration, error) {
	if r.VHDS {
		if len(r.Rules) > 0 {
			return nil, fmt.Errorf("route configuration %s: vhds takes its virtual hosts from VHDS; give its routes as virtual hosts, not rules", r.Name)
		}
		return vhdsRouteConfig(r.Name), nil
	}
	routes := make([]*route.Route, 0, len(r.Rules))
	for i, rule := range r.Rules {
		rt, err := buildRule(rule)
		if err != nil {
			return nil, fmt.Errorf("route %d: %w", i+1, err)
		}
		routes = append(routes, rt)
	}
	return &route.RouteConfiguration{
		Name:         r.Name,
		VirtualHosts: []*route.VirtualHost{{Name: "quote", Domains: []string{"*"}, Routes: routes}},
	}, nil
}

func buildRule(rule RouteRule) (*route.Route, error) {
	match := &route.RouteMatch{}
	switch {
	case rule.Path != "" && rule.Prefix != "":
		return nil, fmt.Errorf("both path and prefix")
	case rule.Path != "":
		match.PathSpecifier = &route.RouteMatch_Path{Path: rule.Path}
	case rule.Prefix != "":
		match.PathSpecifier = &route.RouteMatch_Prefix{Prefix: rule.Prefix}
	}
	for _, h := range rule.Headers {
		hm := &route.HeaderMatcher{Name: h.Name}
		if h.Exact != "" {
			hm.HeaderMatchSpecifier = &route.HeaderMatcher_StringMatch{StringMatch: &matcher.StringMatcher{
				MatchPattern: &matcher.StringMatcher_Exact{Exact: h.Exact}}}
		} else {
			hm.HeaderMatchSpecifier = &route.HeaderMatcher_PresentMatch{PresentMatch: true}
		}
		match.Headers = append(match.Headers, hm)
	}
	action := &route.RouteAction{}
	targets := 0
	for _, set := range []bool{rule.Cluster != "", len(rule.Weighted) > 0, rule.ClusterHeader != ""} {
		if set {
			targets++
		}
	}
	switch {
	case targets > 1:
		return nil, fmt.Errorf("more than one of cluster, weighted clusters and cluster_header")
	case rule.ClusterHeader != "":
		action.ClusterSpecifier = &route.RouteAction_ClusterHeader{ClusterHeader: rule.ClusterHeader}
	case rule.Cluster != "":
		action.ClusterSpecifier = &route.RouteAction_Cluster{Cluster: rule.Cluster}
	case len(rule.Weighted) > 0:
		wc := &route.WeightedCluster{}
		for _, w := range rule.Weighted {
			wc.Clusters = append(wc.Clusters, &route.WeightedCluster_ClusterWeight{Name: w.Cluster, Weight: wrapperspb.UInt32(w.Weight)})
		}
		action.ClusterSpecifier = &route.RouteAction_WeightedClusters{WeightedClusters: wc}
	default:
		return nil, fmt.Errorf("no cluster")
	}
	return &route.Route{Name: rule.Name, Match: match, Action: &route.Route_Route{Route: action}}, nil
}
