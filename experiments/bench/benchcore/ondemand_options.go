package benchcore

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// The on-demand axis (--on-demand): the same scaled state served wildcard (every
// listener, route, cluster and assignment pushed up front: today's shape) or on demand
// (VHDS: one VirtualHost per service, fetched when a request for its Host arrives;
// on-demand CDS: the cluster a route names, fetched on first use). One shape is written
// as resources.OnDemand prints it with "+" between its parts, since "," separates shapes
// on the command line: none, vhds, cds, vhds+cds.

// ShapeWildcard is the shape with nothing on demand.
const ShapeWildcard = "none"

// ParseShape reads one --on-demand shape: none, vhds, cds or vhds+cds.
func ParseShape(s string) (resources.OnDemand, error) {
	if s == "" || strings.Contains(s, ",") {
		return resources.OnDemand{}, errors.New("unknown shape (want none, vhds, cds or vhds+cds)")
	}
	od, err := resources.ParseOnDemand(strings.ReplaceAll(s, "+", ","))
	if err != nil {
		return resources.OnDemand{}, errors.New("unknown shape (want none, vhds, cds or vhds+cds)")
	}
	return od, nil
}

// ShapeName is the flag form of a shape ("none", "vhds", "vhds+cds").
func ShapeName(od resources.OnDemand) string { return strings.ReplaceAll(od.String(), ",", "+") }

// DefaultColdHosts is how many distinct services the on-demand axis requests cold (each
// once, in order), then warm (the same again).
const DefaultColdHosts = 200

// UsedForRSS is how many services are in use when the "10 used" RSS is read.
const UsedForRSS = 10

// onDemandWorkloads are what the on-demand sequence measures: a one-service change
// (endpoint) and a service add (cluster-add).
var onDemandWorkloads = []string{WorkloadEndpoint, WorkloadClusterAdd}

// validateOnDemand checks the on-demand axis against the other options (Validate calls
// it once the rest is checked). Every refusal is an *OptionError.
func (o *Options) validateOnDemand() error {
	if len(o.OnDemand) == 0 {
		return nil
	}
	if err := o.checkShapes(); err != nil {
		return err
	}
	switch {
	case o.Client != ClientEnvoy:
		return refuse(OptionClient, o.Client, errors.New("the on-demand axis runs real Envoy only (the simulated client does not subscribe to virtual hosts or clusters on demand)"))
	case o.Envoys > 1:
		return refuse(OptionEnvoys, fmt.Sprint(o.Envoys), errors.New("the on-demand axis runs one Envoy"))
	case slices.Contains(o.Through, ThroughTap):
		return refuse(OptionThrough, strings.Join(o.Through, ","), errors.New("the on-demand axis runs direct only"))
	}
	for _, w := range o.Workloads {
		if !slices.Contains(onDemandWorkloads, w) {
			return &OptionError{Option: OptionWorkloads, Value: strings.Join(o.Workloads, ","), Item: w, Err: fmt.Errorf("%s is not measured on demand: %w", w, ErrNotOnDemand)}
		}
	}
	if o.ColdHosts == 0 {
		o.ColdHosts = DefaultColdHosts
	}
	return checkCount(OptionColdHosts, o.ColdHosts, MaxColdHosts)
}

// checkShapes: each shape once, and with SotW only shapes SotW can serve (none).
func (o *Options) checkShapes() error {
	seen := map[resources.OnDemand]bool{}
	for _, od := range o.OnDemand {
		if seen[od] {
			return &OptionError{Option: OptionOnDemand, Value: ShapeNames(o.OnDemand), Item: ShapeName(od), Err: fmt.Errorf("%s is listed twice", ShapeName(od))}
		}
		seen[od] = true
		if !slices.Contains(o.Modes, protocol.SotW) {
			continue
		}
		if err := od.CheckMode(true); err != nil {
			return &OptionError{Option: OptionModes, Value: joinList(o.Modes), Item: ShapeName(od), Err: fmt.Errorf("on-demand shape %s runs delta only: %w", ShapeName(od), err)}
		}
	}
	return nil
}

// MaxColdHosts bounds --cold-hosts.
const MaxColdHosts = 10_000

func ShapeNames(v []resources.OnDemand) string {
	s := make([]string, len(v))
	for i, od := range v {
		s[i] = ShapeName(od)
	}
	return strings.Join(s, ",")
}
