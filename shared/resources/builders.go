package resources

import (
	"fmt"

	accesslog "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	fileal "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	router "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/loopback"
)

// deterministicAny packs m with deterministic marshaling, so equal content gives equal
// bytes and therefore equal hashes.
func deterministicAny(m proto.Message) (*anypb.Any, error) {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		return nil, err
	}
	return a, nil
}

func adsSource() *core.ConfigSource {
	return &core.ConfigSource{
		ResourceApiVersion:    core.ApiVersion_V3,
		ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
	}
}

func buildListener(s State) (*listener.Listener, error) {
	return listenerFor(ListenerSpec{Name: ListenerName, Port: s.ListenerPort, RouteName: RouteName, StatPrefix: StatPrefix,
		ServerName: s.ServerName, AccessLogPath: s.AccessLogPath, OnDemand: s.OnDemand, Proxyless: s.Proxyless, TLS: s.TLS})
}

func listenerFor(s ListenerSpec) (*listener.Listener, error) {
	m, err := httpConnectionManager(s)
	if err != nil {
		return nil, err
	}
	// ValidateAll does not look inside an Any: validate the HCM before packing it.
	if err := m.ValidateAll(); err != nil {
		return nil, fmt.Errorf("http connection manager: %w", err)
	}
	packed, err := deterministicAny(m)
	if err != nil {
		return nil, fmt.Errorf("pack http connection manager: %w", err)
	}
	if s.Proxyless {
		// A proxyless client has no socket to bind: the HCM is the listener's
		// api_listener, which is what grpc-go reads for a client-side listener
		// (internal/xds/xdsclient/xdsresource/unmarshal_lds.go, processListener ->
		// processClientSideListener).
		return &listener.Listener{Name: s.Name, ApiListener: &listener.ApiListener{ApiListener: packed}}, nil
	}
	var statPrefix string
	chain := &listener.FilterChain{Filters: []*listener.Filter{{
		Name:       wellknown.HTTPConnectionManager,
		ConfigType: &listener.Filter_TypedConfig{TypedConfig: packed},
	}}}
	if s.TLS.Secret != "" {
		if chain.TransportSocket, err = downstreamTLS(s.TLS); err != nil {
			return nil, fmt.Errorf("listener %s: %w", s.Name, err)
		}
		// The listener's stats scope is its stat_prefix, else its address
		// (listener_impl.cc, listenerStatsScope): by name, a scenario can name
		// listener.<name>.server_ssl_socket_factory.* without the run's port.
		statPrefix = s.Name
	}
	return &listener.Listener{
		Name:       s.Name,
		StatPrefix: statPrefix,
		Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address:       loopback.Host,
			PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(s.Port)},
		}}},
		FilterChains: []*listener.FilterChain{chain},
	}, nil
}

// httpConnectionManager is the listener's HTTP connection manager: routes from RDS over
// ADS, the router (after the on_demand filter when something is on demand), and the
// access log when asked. The proxyless shape takes neither an access log nor the
// on_demand filter: grpc-go has no filter implementation for on_demand and NACKs a
// listener naming one (unmarshal_lds.go, validateHTTPFilterConfig: "no filter
// implementation found"), and it writes no access log.
func httpConnectionManager(s ListenerSpec) (*hcm.HttpConnectionManager, error) {
	if s.Proxyless && s.OnDemand.Any() {
		return nil, fmt.Errorf("listener %s: on-demand xDS is Envoy's on_demand filter, which a proxyless (grpc-go) listener cannot carry", s.Name)
	}
	if s.Proxyless && s.AccessLogPath != "" {
		return nil, fmt.Errorf("listener %s: a proxyless (grpc-go) listener writes no access log", s.Name)
	}
	if s.Proxyless && s.TLS.Secret != "" {
		return nil, fmt.Errorf("listener %s: %s", s.Name, ProxylessNoSDS)
	}
	routerCfg, err := deterministicAny(&router.Router{})
	if err != nil {
		return nil, fmt.Errorf("pack router: %w", err)
	}
	routerFilter := &hcm.HttpFilter{Name: wellknown.Router, ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: routerCfg}}
	filters := []*hcm.HttpFilter{routerFilter}
	if s.OnDemand.Any() {
		// The on_demand filter must come before the router: it holds the request while
		// Envoy subscribes (VHDS doc; on_demand filter doc).
		od, err := onDemandFilter(s.OnDemand, s.ODCDSTimeout)
		if err != nil {
			return nil, err
		}
		filters = []*hcm.HttpFilter{od, routerFilter}
	}
	m := &hcm.HttpConnectionManager{
		CodecType:  hcm.HttpConnectionManager_AUTO,
		StatPrefix: s.StatPrefix,
		RouteSpecifier: &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: s.RouteName,
		}},
		HttpFilters:                  filters,
		AlwaysSetRequestIdInResponse: true,
		ServerName:                   s.ServerName,
	}
	if s.AccessLogPath != "" {
		al, err := deterministicAny(&fileal.FileAccessLog{
			Path: s.AccessLogPath,
			AccessLogFormat: &fileal.FileAccessLog_LogFormat{LogFormat: &core.SubstitutionFormatString{
				Format: &core.SubstitutionFormatString_TextFormatSource{TextFormatSource: &core.DataSource{
					Specifier: &core.DataSource_InlineString{InlineString: AccessLogFormat},
				}},
			}},
		})
		if err != nil {
			return nil, fmt.Errorf("pack access log: %w", err)
		}
		m.AccessLog = []*accesslog.AccessLog{{Name: "envoy.access_loggers.file", ConfigType: &accesslog.AccessLog_TypedConfig{TypedConfig: al}}}
	}
	return m, nil
}

// routeTo is the route named name matching path exactly and sending to clusterName.
func routeTo(path, name, clusterName string, invalid bool) *route.Route {
	match := &route.RouteMatch{PathSpecifier: &route.RouteMatch_Path{Path: path}}
	if invalid {
		match = &route.RouteMatch{} // no path specifier: fails RouteValidationError.Match
	}
	return &route.Route{
		Name:  name,
		Match: match,
		Action: &route.Route_Route{Route: &route.RouteAction{
			ClusterSpecifier: &route.RouteAction_Cluster{Cluster: clusterName},
		}},
	}
}

func buildRoute(s State) *route.RouteConfiguration {
	var routes []*route.Route
	if s.Clusters <= 0 {
		// Exact path match: the query string is not part of :path matching, so
		// /quote?sku=paper matches.
		routes = []*route.Route{routeTo(QuotePath, ClusterName, ClusterName, s.InvalidRoute)}
	} else {
		routes = make([]*route.Route, s.Clusters)
		for i := range routes {
			target := i
			if j, ok := s.RouteTargets[i]; ok {
				target = j
			}
			routes[i] = routeTo(ScaledPath(i), ScaledClusterName(i), ScaledClusterName(target), s.InvalidRoute && i == 0)
		}
	}
	return &route.RouteConfiguration{
		Name: RouteName,
		VirtualHosts: []*route.VirtualHost{{
			Name:    "quote",
			Domains: []string{"*"},
			Routes:  routes,
		}},
	}
}

// buildVirtualHost is service i's virtual host in the on-demand (VHDS) shape: the same
// route the inline route configuration has for it, under its own Host.
func buildVirtualHost(s State, i int) *route.VirtualHost {
	if s.Clusters <= 0 {
		return &route.VirtualHost{Name: VirtualHostName(RouteName, QuoteHost), Domains: []string{QuoteHost},
			Routes: []*route.Route{routeTo(QuotePath, ClusterName, ClusterName, false)}}
	}
	target := i
	if j, ok := s.RouteTargets[i]; ok {
		target = j
	}
	host := ServiceHost(i)
	return &route.VirtualHost{Name: VirtualHostName(RouteName, host), Domains: []string{host},
		Routes: []*route.Route{routeTo(ScaledPath(i), ScaledClusterName(i), ScaledClusterName(target), false)}}
}

func buildCluster(name string) *cluster.Cluster {
	c, _ := BuildCluster(ClusterSpec{Name: name}) // only an HTTP/2 cluster packs anything that can fail
	return c
}

func buildEndpoints(name string, port int) *endpoint.ClusterLoadAssignment {
	if port == noEndpoint {
		return BuildEndpoints(name)
	}
	return BuildEndpoints(name, port)
}
