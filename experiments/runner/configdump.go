package runner

import (
	"strconv"
	"strings"

	"github.com/xds-workbench/lab/experiments/clientview"
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

// parseConfigDump reads the dump (clientview.ParseEnvoyDump, the one parser of it) into
// the runner's keys: "TYPE/name" with its active version, " (warming)", " (draining)",
// " (error)" (the rejected update's details) and, for endpoints, " port". A body that is
// not a config dump gives an empty view.
func parseConfigDump(dump []byte) dumpView {
	v := dumpView{versions: map[string]string{}, states: map[scenario.Key]map[string]bool{}}
	d, err := clientview.ParseEnvoyDump(dump)
	if err != nil {
		return v
	}
	for _, e := range d.Entries {
		k := scenario.Key{Type: e.Type, Name: e.Name}
		base := string(e.Type) + "/" + e.Name
		if e.Draining != nil {
			v.versions[base+" (draining)"] = e.Draining.Version
			v.add(k, scenario.StateDraining)
		}
		if e.Warming != nil {
			v.versions[base+" (warming)"] = e.Warming.Version
			v.add(k, scenario.StateWarming)
		}
		if e.Active != nil {
			v.versions[base] = e.Active.Version
			v.add(k, scenario.StateActive)
		}
		if e.Error != nil {
			v.versions[base+" (error)"] = e.Error.Details
		}
		if len(e.Ports) > 0 {
			ports := make([]string, len(e.Ports))
			for i, p := range e.Ports {
				ports[i] = strconv.Itoa(p)
			}
			v.versions[base+" port"] = strings.Join(ports, ",")
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
