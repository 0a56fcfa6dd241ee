package runner

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
)

// dumpView is what the runner reads from Envoy's /config_dump?include_eds: per dynamic
// resource its version_info and its state (active, warming, draining).
type dumpView struct {
	versions map[string]string
	// states holds, per resource, every state it is in: an updated listener can be active
	// (the new version) and draining (the old one) at once.
	states map[scenario.Key]map[string]bool
}

func (v dumpView) add(k scenario.Key, state string) {
	if v.states[k] == nil {
		v.states[k] = map[string]bool{}
	}
	v.states[k][state] = true
}

func parseConfigDump(dump []byte) dumpView {
	v := dumpView{versions: map[string]string{}, states: map[scenario.Key]map[string]bool{}}
	var doc struct {
		Configs []map[string]json.RawMessage `json:"configs"`
	}
	if json.Unmarshal(dump, &doc) != nil {
		return v
	}
	type versioned struct {
		VersionInfo string `json:"version_info"`
	}
	for _, c := range doc.Configs {
		var typ string
		_ = json.Unmarshal(c["@type"], &typ)
		switch {
		case strings.HasSuffix(typ, "ListenersConfigDump"):
			var ls []struct {
				Name          string          `json:"name"`
				ActiveState   *versioned      `json:"active_state"`
				WarmingState  *versioned      `json:"warming_state"`
				DrainingState *versioned      `json:"draining_state"`
				ErrorState    json.RawMessage `json:"error_state"`
			}
			_ = json.Unmarshal(c["dynamic_listeners"], &ls)
			for _, l := range ls {
				k := scenario.Key{Type: resources.LDS, Name: l.Name}
				if l.DrainingState != nil {
					v.versions["LDS/"+l.Name+" (draining)"] = l.DrainingState.VersionInfo
					v.add(k, scenario.StateDraining)
				}
				if l.WarmingState != nil {
					v.versions["LDS/"+l.Name+" (warming)"] = l.WarmingState.VersionInfo
					v.add(k, scenario.StateWarming)
				}
				if l.ActiveState != nil {
					v.versions["LDS/"+l.Name] = l.ActiveState.VersionInfo
					v.add(k, scenario.StateActive)
				}
				if len(l.ErrorState) > 0 {
					v.versions["LDS/"+l.Name+" (error)"] = string(l.ErrorState)
				}
			}
		case strings.HasSuffix(typ, "RoutesConfigDump"):
			var rs []struct {
				VersionInfo string `json:"version_info"`
				RouteConfig struct {
					Name string `json:"name"`
				} `json:"route_config"`
			}
			_ = json.Unmarshal(c["dynamic_route_configs"], &rs)
			for _, x := range rs {
				v.versions["RDS/"+x.RouteConfig.Name] = x.VersionInfo
				v.add(scenario.Key{Type: resources.RDS, Name: x.RouteConfig.Name}, scenario.StateActive)
			}
		case strings.HasSuffix(typ, "ClustersConfigDump"):
			type dc struct {
				VersionInfo string `json:"version_info"`
				Cluster     struct {
					Name string `json:"name"`
				} `json:"cluster"`
			}
			var active, warming []dc
			_ = json.Unmarshal(c["dynamic_active_clusters"], &active)
			_ = json.Unmarshal(c["dynamic_warming_clusters"], &warming)
			for _, x := range warming {
				v.versions["CDS/"+x.Cluster.Name+" (warming)"] = x.VersionInfo
				v.add(scenario.Key{Type: resources.CDS, Name: x.Cluster.Name}, scenario.StateWarming)
			}
			for _, x := range active {
				v.versions["CDS/"+x.Cluster.Name] = x.VersionInfo
				v.add(scenario.Key{Type: resources.CDS, Name: x.Cluster.Name}, scenario.StateActive)
			}
		case strings.HasSuffix(typ, "EndpointsConfigDump"):
			var es []struct {
				VersionInfo    string `json:"version_info"`
				EndpointConfig struct {
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
				} `json:"endpoint_config"`
			}
			_ = json.Unmarshal(c["dynamic_endpoint_configs"], &es)
			for _, x := range es {
				name := x.EndpointConfig.ClusterName
				v.versions["EDS/"+name] = x.VersionInfo
				v.add(scenario.Key{Type: resources.EDS, Name: name}, scenario.StateActive)
				var ports []string
				for _, le := range x.EndpointConfig.Endpoints {
					for _, lb := range le.LbEndpoints {
						ports = append(ports, strconv.Itoa(lb.Endpoint.Address.SocketAddress.PortValue))
					}
				}
				if len(ports) > 0 {
					v.versions["EDS/"+name+" port"] = strings.Join(ports, ",")
				}
			}
		}
	}
	return v
}

// configVersions extracts version_info per dynamic resource from /config_dump.
func configVersions(dump []byte) map[string]string { return parseConfigDump(dump).versions }

// is reports whether the resource is in state (absent: in none).
func (v dumpView) is(k scenario.Key, state string) bool {
	if state == scenario.StateAbsent {
		return len(v.states[k]) == 0
	}
	return v.states[k][state]
}

// describe lists the resource's states ("absent" when none).
func (v dumpView) describe(k scenario.Key) string {
	var out []string
	for _, s := range []string{scenario.StateActive, scenario.StateWarming, scenario.StateDraining} {
		if v.states[k][s] {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return scenario.StateAbsent
	}
	return strings.Join(out, "+")
}
