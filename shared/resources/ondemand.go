package resources

import (
	"fmt"
	"slices"
	"strings"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ondemand "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/on_demand/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// On-demand xDS: Envoy fetches a virtual host (VHDS) or a cluster (on-demand CDS) only
// when a request needs it, so it holds what it uses instead of everything.
//
// VHDS: a RouteConfiguration carries `vhds` (config source ADS) and no inline virtual
// hosts; each virtual host is a resource of its own named "<route config>/<host>"
// (Envoy's VHDS doc, "Virtual Host Resource Naming Convention"). When no virtual host
// matches a request's Host, the HTTP connection manager's envoy.filters.http.on_demand
// filter holds the request, Envoy subscribes to "<route config>/<Host as sent>" and
// resumes the request once a response names it (VHDS doc, "Subscribing to Resources").
//
// On-demand CDS: the same filter's `odcds` config makes Envoy subscribe to the one
// cluster a route names (by name or through cluster_header) on first use, then to its
// assignment. The bootstrap then has no cds_config, so CDS is never a wildcard.
//
// Both ride on delta xDS only. VHDS has no SotW variant in the protocol (xDS protocol,
// "RPC Services and Methods for Each Variant" lists VirtualHost with SotW "N/A"), and
// Envoy enforces that when it loads the route configuration
// (source/common/router/vhds.cc: "vhds: ADS must use DELTA_GRPC api_type when used as
// VHDS config source."). On-demand CDS is Envoy's limit, not the protocol's (CDS has a
// SotW method): it has no such check, but its SotW callback is not implemented
// (source/common/upstream/od_cds_api_impl.cc).

// OnDemand is the on-demand shape of a desired state.
type OnDemand struct {
	// VirtualHosts serves routes through VHDS: virtual hosts fetched per Host header.
	VirtualHosts bool
	// Clusters serves clusters through on-demand CDS: fetched per route target.
	Clusters bool
}

// OnDemand values as flags and scenario files write them.
const (
	OnDemandVHDS = "vhds"
	OnDemandCDS  = "cds"
)

// ParseOnDemand reads "", "none", "vhds", "cds" or "vhds,cds".
func ParseOnDemand(s string) (OnDemand, error) {
	var o OnDemand
	if s == "" || s == "none" {
		return o, nil
	}
	for _, part := range strings.Split(s, ",") {
		switch strings.TrimSpace(part) {
		case OnDemandVHDS:
			o.VirtualHosts = true
		case OnDemandCDS:
			o.Clusters = true
		default:
			return OnDemand{}, fmt.Errorf("unknown part %q (want vhds, cds, vhds,cds or none)", part)
		}
	}
	return o, nil
}

// Any reports whether anything is on demand.
func (o OnDemand) Any() bool { return o.VirtualHosts || o.Clusters }

// String is the flag form ("none" when nothing is on demand).
func (o OnDemand) String() string {
	var parts []string
	if o.VirtualHosts {
		parts = append(parts, OnDemandVHDS)
	}
	if o.Clusters {
		parts = append(parts, OnDemandCDS)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// ErrOnDemandNeedsDelta is the refusal of an on-demand shape in SotW. Its text cites why.
var ErrOnDemandNeedsDelta = fmt.Errorf("on-demand xDS (VHDS, on-demand CDS) needs delta xDS: " +
	"VHDS has no SotW variant (xDS protocol, \"RPC Services and Methods for Each Variant\"), and Envoy " +
	"NACKs a VHDS route configuration over SotW ADS (source/common/router/vhds.cc: \"vhds: ADS must use " +
	"DELTA_GRPC api_type when used as VHDS config source.\"); on-demand CDS over SotW is Envoy's own " +
	"limit (od_cds_api_impl.cc has no SotW callback)")

// CheckMode refuses an on-demand shape for a SotW run. sotw is true for SotW.
func (o OnDemand) CheckMode(sotw bool) error {
	if sotw && o.Any() {
		return ErrOnDemandNeedsDelta
	}
	return nil
}

// DefaultODCDSTimeout is how long the on_demand filter waits for an on-demand cluster
// before the request goes on without it (503 NC). Envoy's own default is 5 s
// (OnDemandCds.timeout); the workbench keeps it and says so in the filter config.
const DefaultODCDSTimeout = 5 * time.Second

// VirtualHostName is the VHDS resource name of host in route configuration routeName.
func VirtualHostName(routeName, host string) string { return routeName + "/" + host }

// SplitVirtualHostName splits "<route>/<host>" at its last slash: a host cannot contain
// one, a route configuration name can (VHDS doc, "matching should be done from right to
// left").
func SplitVirtualHostName(name string) (routeName, host string, ok bool) {
	i := strings.LastIndex(name, "/")
	if i <= 0 || i == len(name)-1 {
		return "", "", false
	}
	return name[:i], name[i+1:], true
}

// ServiceHost is the Host of service i in the scaled on-demand state: its virtual host's
// one domain.
func ServiceHost(i int) string { return fmt.Sprintf("svc-%04d", i) }

// onDemandFilter is the envoy.filters.http.on_demand filter, with odcds when clusters
// are on demand.
func onDemandFilter(o OnDemand, timeout time.Duration) (*hcm.HttpFilter, error) {
	cfg := &ondemand.OnDemand{}
	if o.Clusters {
		if timeout <= 0 {
			timeout = DefaultODCDSTimeout
		}
		cfg.Odcds = &ondemand.OnDemandCds{Source: adsSource(), Timeout: durationpb.New(timeout)}
	}
	if err := cfg.ValidateAll(); err != nil {
		return nil, fmt.Errorf("on_demand filter: %w", err)
	}
	packed, err := deterministicAny(cfg)
	if err != nil {
		return nil, fmt.Errorf("pack on_demand filter: %w", err)
	}
	return &hcm.HttpFilter{Name: "envoy.filters.http.on_demand", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: packed}}, nil
}

// vhdsRouteConfig is a route configuration whose virtual hosts all come from VHDS.
func vhdsRouteConfig(name string) *route.RouteConfiguration {
	return &route.RouteConfiguration{Name: name, Vhds: &route.Vhds{ConfigSource: &core.ConfigSource{
		ResourceApiVersion:    core.ApiVersion_V3,
		ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
	}}}
}

// VirtualHostSpec is one VHDS virtual host: named "<Route>/<Host>", matching Host and
// any further Domains, with Rules as a route configuration's.
type VirtualHostSpec struct {
	Route   string
	Host    string
	Domains []string
	Rules   []RouteRule
}

// BuildVirtualHost builds the virtual host v describes.
func BuildVirtualHost(v VirtualHostSpec) (*route.VirtualHost, error) {
	if v.Route == "" || v.Host == "" || strings.Contains(v.Host, "/") {
		return nil, fmt.Errorf("virtual host needs a route configuration and a host without '/' (got %q, %q)", v.Route, v.Host)
	}
	routes := make([]*route.Route, 0, len(v.Rules))
	for i, rule := range v.Rules {
		rt, err := buildRule(rule)
		if err != nil {
			return nil, fmt.Errorf("virtual host %s route %d: %w", v.Host, i+1, err)
		}
		routes = append(routes, rt)
	}
	domains := append([]string{v.Host}, v.Domains...)
	return &route.VirtualHost{Name: VirtualHostName(v.Route, v.Host), Domains: domains, Routes: routes}, nil
}

// checkVirtualHosts enforces what VHDS needs of a set's virtual hosts: each is named
// "<route>/<host>" after a route configuration of the set that takes VHDS, host is one
// of its domains (Envoy resumes a held request only when the name matches
// "<route>/<Host>" exactly; go-control-plane sends no aliases), and no domain is claimed
// twice within one route configuration.
func checkVirtualHosts(version string, set *Set) error {
	vhds := map[string]bool{} // route configuration -> takes VHDS
	for _, r := range set.ByType[RDS].All() {
		if rc, ok := r.Resource.(*route.RouteConfiguration); ok {
			vhds[r.Name] = rc.GetVhds() != nil
		}
	}
	claimed := map[string]string{} // route + "\x00" + domain -> virtual host
	for _, r := range set.ByType[VHDS].All() {
		vh, ok := r.Resource.(*route.VirtualHost)
		if !ok {
			return fmt.Errorf("version %s: VHDS %q is a %T, not a VirtualHost", version, r.Name, r.Resource)
		}
		rt, host, ok := SplitVirtualHostName(r.Name)
		if !ok {
			return fmt.Errorf("version %s: VHDS %q: a virtual host's name must be <route configuration>/<host>", version, r.Name)
		}
		// A virtual host may be published before its route configuration (a scenario's
		// sets are lenient), but never for one that takes no VHDS.
		if takes, present := vhds[rt]; present && !takes {
			return fmt.Errorf("version %s: VHDS %q: route configuration %q has no vhds (a virtual host's name starts with its route configuration's name and '/')", version, r.Name, rt)
		}
		if host == "*" {
			return fmt.Errorf("version %s: VHDS %q: a virtual host fetched on demand needs a real host, not \"*\"", version, r.Name)
		}
		if !slices.Contains(vh.GetDomains(), host) {
			return fmt.Errorf("version %s: VHDS %q: host %q is not among its domains %v (Envoy asks for <route>/<Host> and resumes on that exact name)", version, r.Name, host, vh.GetDomains())
		}
		for _, d := range vh.GetDomains() {
			k := rt + "\x00" + d
			if other, dup := claimed[k]; dup {
				return fmt.Errorf("version %s: domain %q is claimed by two virtual hosts of %s: %q and %q", version, d, rt, other, r.Name)
			}
			claimed[k] = r.Name
		}
	}
	return nil
}
