package clientview

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/resources"
)

// EnvoyDump is what Envoy's /config_dump?include_eds says of each dynamic resource, in
// the order of the dump. The runner's config-dump checks (warming, active, absent) and
// FromEnvoyConfigDump both read it, so the dump is parsed in one place.
type EnvoyDump struct {
	Entries []EnvoyEntry
}

// EnvoyEntry is one dynamic listener, route configuration, cluster or endpoint
// assignment of a config dump.
type EnvoyEntry struct {
	Type resources.Type
	Name string
	// Active, Warming and Draining are the states the resource is in (nil: not in it),
	// each with its version_info. A listener can be in several at once: an update
	// warming beside the active one, or a replaced one draining. A cluster is either in
	// dynamic_active_clusters or in dynamic_warming_clusters; route configurations and
	// endpoint assignments are always active.
	Active, Warming, Draining *EnvoyState
	// Error is the entry's error_state: the last update of it that Envoy rejected.
	Error *EnvoyError
	// EDSService is, for a cluster of type EDS, the assignment it subscribes to
	// (eds_cluster_config.service_name, else the cluster's name); "" for other clusters.
	EDSService string
	// Ports are an endpoint assignment's endpoint ports, in order.
	Ports []int
	// VHDS marks a route configuration with virtual hosts on demand (its vhds field).
	VHDS bool
}

// EnvoyState is a resource's version in one state, with the resource as dumped (JSON
// of an Any; nil for endpoint assignments, which Envoy rebuilds from its hosts).
type EnvoyState struct {
	Version  string
	Resource json.RawMessage
}

// EnvoyError is an UpdateFailureState (envoy.admin.v3): the rejected update's
// version_info, Envoy's reason (details) and when it tried (last_update_attempt).
type EnvoyError struct {
	Version     string
	Details     string
	LastAttempt string
}

// dumpEntry is the JSON shape every dynamic entry shares: the resource is in one of
// listener-like states or in cluster / route_config / endpoint_config.
type dumpEntry struct {
	Name          string          `json:"name"`
	VersionInfo   string          `json:"version_info"`
	ActiveState   *stateJSON      `json:"active_state"`
	WarmingState  *stateJSON      `json:"warming_state"`
	DrainingState *stateJSON      `json:"draining_state"`
	ErrorState    *errorJSON      `json:"error_state"`
	Cluster       json.RawMessage `json:"cluster"`
	RouteConfig   json.RawMessage `json:"route_config"`
	Endpoints     *assignmentJSON `json:"endpoint_config"`
}

type stateJSON struct {
	VersionInfo string          `json:"version_info"`
	Listener    json.RawMessage `json:"listener"`
}

type errorJSON struct {
	VersionInfo       string `json:"version_info"`
	Details           string `json:"details"`
	LastUpdateAttempt string `json:"last_update_attempt"`
}

type routeJSON struct {
	Name string          `json:"name"`
	VHDS json.RawMessage `json:"vhds"`
}

type clusterJSON struct {
	Name string `json:"name"`
	// Type is the discovery type; protojson leaves out the default, STATIC.
	Type             string `json:"type"`
	EDSClusterConfig *struct {
		ServiceName string `json:"service_name"`
	} `json:"eds_cluster_config"`
}

type assignmentJSON struct {
	ClusterName string `json:"cluster_name"`
	Endpoints   []struct {
		LbEndpoints []struct {
			Endpoint struct {
				Address struct {
					SocketAddress struct {
						PortValue int `json:"port_value"`
					} `json:"socket_address"`
				} `json:"address"`
			} `json:"endpoint"`
		} `json:"lb_endpoints"`
	} `json:"endpoints"`
}

// The config dump's sections, by the suffix of their @type, and the repeated fields of
// each that hold dynamic resources (static ones come from the bootstrap, not from xDS).
var dumpSections = []struct {
	suffix string
	typ    resources.Type
	fields []string
}{
	{"ListenersConfigDump", resources.LDS, []string{"dynamic_listeners"}},
	{"RoutesConfigDump", resources.RDS, []string{"dynamic_route_configs"}},
	{"ClustersConfigDump", resources.CDS, []string{"dynamic_active_clusters", "dynamic_warming_clusters"}},
	{"EndpointsConfigDump", resources.EDS, []string{"dynamic_endpoint_configs"}},
}

// ParseEnvoyDump reads a /config_dump (with include_eds for the endpoint assignments).
// It fails only on a body that is not a config dump; sections it does not know (secrets,
// scoped routes, the bootstrap) are skipped.
func ParseEnvoyDump(dump []byte) (EnvoyDump, error) {
	var doc struct {
		Configs []map[string]json.RawMessage `json:"configs"`
	}
	if err := json.Unmarshal(dump, &doc); err != nil {
		return EnvoyDump{}, fmt.Errorf("config dump: %w", err)
	}
	if doc.Configs == nil {
		return EnvoyDump{}, errors.New("config dump: no configs")
	}
	var out EnvoyDump
	for _, c := range doc.Configs {
		var typ string
		_ = json.Unmarshal(c["@type"], &typ)
		for _, sec := range dumpSections {
			if !strings.HasSuffix(typ, sec.suffix) {
				continue
			}
			for _, field := range sec.fields {
				var list []dumpEntry
				if raw, ok := c[field]; ok {
					if err := json.Unmarshal(raw, &list); err != nil {
						return EnvoyDump{}, fmt.Errorf("config dump %s: %w", field, err)
					}
				}
				for _, d := range list {
					out.Entries = append(out.Entries, d.entry(sec.typ, field == "dynamic_warming_clusters"))
				}
			}
		}
	}
	return out, nil
}

// entry turns one dynamic entry of a section into an EnvoyEntry.
func (d dumpEntry) entry(typ resources.Type, warming bool) EnvoyEntry {
	e := EnvoyEntry{Type: typ, Name: d.Name}
	if d.ErrorState != nil {
		e.Error = &EnvoyError{Version: d.ErrorState.VersionInfo, Details: d.ErrorState.Details, LastAttempt: d.ErrorState.LastUpdateAttempt}
	}
	state := func(s *stateJSON) *EnvoyState {
		if s == nil {
			return nil
		}
		return &EnvoyState{Version: s.VersionInfo, Resource: s.Listener}
	}
	switch typ {
	case resources.LDS:
		e.Active, e.Warming, e.Draining = state(d.ActiveState), state(d.WarmingState), state(d.DrainingState)
	case resources.RDS:
		var rc routeJSON
		if d.RouteConfig != nil && json.Unmarshal(d.RouteConfig, &rc) == nil {
			e.Name, e.VHDS = rc.Name, len(rc.VHDS) > 0
			e.Active = &EnvoyState{Version: d.VersionInfo, Resource: d.RouteConfig}
		}
	case resources.CDS:
		var c clusterJSON
		if d.Cluster != nil && json.Unmarshal(d.Cluster, &c) == nil {
			e.Name = c.Name
			e.EDSService = c.edsService()
			s := &EnvoyState{Version: d.VersionInfo, Resource: d.Cluster}
			if warming {
				e.Warming = s
			} else {
				e.Active = s
			}
		}
	case resources.EDS:
		if d.Endpoints != nil {
			e.Name = d.Endpoints.ClusterName
			e.Active = &EnvoyState{Version: d.VersionInfo}
			for _, le := range d.Endpoints.Endpoints {
				for _, lb := range le.LbEndpoints {
					e.Ports = append(e.Ports, lb.Endpoint.Address.SocketAddress.PortValue)
				}
			}
		}
	}
	return e
}

func (c *clusterJSON) edsService() string {
	if c.Type != "EDS" {
		return ""
	}
	if c.EDSClusterConfig != nil && c.EDSClusterConfig.ServiceName != "" {
		return c.EDSClusterConfig.ServiceName
	}
	return c.Name
}

// FromEnvoyConfigDump is Envoy's own view of what it holds, from /config_dump?include_eds.
// Envoy's config dump is not CSDS: it lists only what Envoy took, so a view from it has
// no DOES_NOT_EXIST and no REQUESTED resource (a name Envoy asked for and never got is
// simply absent), and it has per resource:
//   - listeners: the version of the warming_state when there is one (Envoy accepted the
//     update and waits for its route configuration), else of the active_state; a
//     draining_state alone (a removed listener draining its connections) is not held.
//     error_state makes it NACKED, with the rejected update's details (Envoy 1.40
//     also lists the error once more in a nameless entry, which is left out);
//   - clusters: dynamic_active_clusters and dynamic_warming_clusters (Warming), with
//     their version_info (Envoy 1.40 gives clusters no error_state: a rejected cluster
//     update leaves the cluster as it was, ACKED); when a cluster is both active and
//     warming (an update warming), the active one is the row: Envoy answers the CDS
//     response only once the update has warmed;
//   - route configurations: dynamic_route_configs with their version_info (no
//     error_state: a rejected update leaves the route configuration as it was); one
//     with VHDS is PresenceOnly;
//   - endpoint assignments: one per active dynamic EDS cluster, built from the cluster's
//     hosts with no version_info (ConfigDumpHandler::dumpEndpointConfigs, Envoy
//     source/server/admin/config_dump_handler.cc). An assignment with endpoints is
//     ACKED; one with none is UNKNOWN, since Envoy shows the same for an empty
//     assignment and for a cluster that went active after its initial_fetch_timeout
//     without one. A warming EDS cluster's assignment is not dumped ("TODO: Add ability
//     to see warming clusters"), so it is UNKNOWN and Warming. Non-EDS clusters'
//     endpoints are not EDS resources and are left out.
//
// Versions are the version_info Envoy keeps per resource: the label of the response
// that last changed the resource's content (Check explains what that means for the
// comparison). Hash is the content hash of the dumped listener, route configuration or
// cluster (contentHash): Envoy dumps what it was sent, and re-encoded the way
// go-control-plane encodes it, it hashes to the hash xds.log recorded for it (so it did
// for every one of the pack's scenarios, both protocols, every cache).
func FromEnvoyConfigDump(dump []byte) ([]Resource, error) {
	d, err := ParseEnvoyDump(dump)
	if err != nil {
		return nil, err
	}
	var out []Resource
	eds := map[string]bool{}        // assignments of active EDS clusters
	warmingEDS := map[string]bool{} // assignments of warming EDS clusters
	for _, e := range d.Entries {
		switch {
		case e.Type == resources.CDS && e.EDSService != "" && e.Active != nil:
			eds[e.EDSService] = true
		case e.Type == resources.CDS && e.EDSService != "" && e.Warming != nil:
			warmingEDS[e.EDSService] = true
		}
	}
	seen := map[string]bool{}
	for _, e := range d.Entries {
		r, ok := e.resource(eds)
		key := string(r.Type) + "/" + r.Name
		if !ok || seen[key] || r.Name == "" {
			// A nameless entry is no resource: Envoy 1.40 lists a rejected listener's
			// error_state a second time without a name.
			continue
		}
		seen[key] = true
		out = append(out, r)
	}
	for _, name := range slices.Sorted(maps.Keys(warmingEDS)) {
		if !seen[string(resources.EDS)+"/"+name] {
			out = append(out, Resource{Type: string(resources.EDS), Name: name, Status: StatusUnknown, Warming: true})
		}
	}
	return out, nil
}

// resource is an entry as a view row; ok is false for what is not a held xDS resource
// (a draining listener, a non-EDS cluster's endpoints).
func (e EnvoyEntry) resource(eds map[string]bool) (Resource, bool) {
	r := Resource{Type: string(e.Type), Name: e.Name, Status: StatusACKED}
	var st *EnvoyState
	switch {
	case e.Warming != nil:
		st, r.Warming = e.Warming, true
	case e.Active != nil:
		st = e.Active
	case e.Error == nil:
		return r, false // draining only
	default:
		r.Status = StatusNACKED // rejected and never taken
	}
	if st != nil {
		r.Version, r.Hash = st.Version, contentHash(st.Resource)
	}
	switch {
	case e.Type == resources.EDS && !eds[e.Name]:
		return r, false
	case e.Type == resources.EDS:
		r.PresenceOnly = true
		if len(e.Ports) == 0 {
			r.Status = StatusUnknown
		}
	case e.VHDS:
		// RouteConfigUpdateReceiverImpl::onVhdsUpdate gives the route configuration the
		// version of the VHDS update, and the dump shows it merged with its virtual hosts.
		r.PresenceOnly, r.Hash = true, ""
	}
	if e.Error != nil {
		r.Status, r.Error, r.RejectedVersion = StatusNACKED, e.Error.Details, e.Error.Version
	}
	return r, true
}

// contentHash is the content hash of a dumped resource (JSON of an Any), computed as the
// recorder's: the deterministic encoding go-control-plane sends (cachev3.MarshalResource)
// under SHA-256 (cachev3.HashResource). Envoy dumps the resource it was sent, so this
// gives the hash xds.log has for it; "" when the JSON cannot be read back (a type this
// binary does not link).
func contentHash(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var a anypb.Any
	if protojson.Unmarshal(raw, &a) != nil {
		return ""
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return ""
	}
	b, err := cachev3.MarshalResource(m)
	if err != nil {
		return ""
	}
	return cachev3.HashResource(b)
}
