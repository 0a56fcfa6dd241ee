package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/progress"
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

// usedForRSS is how many services are in use when the "10 used" RSS is read.
const usedForRSS = 10

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
			return &OptionError{Option: OptionOnDemand, Value: shapeNames(o.OnDemand), Item: ShapeName(od), Err: fmt.Errorf("%s is listed twice", ShapeName(od))}
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

func shapeNames(v []resources.OnDemand) string {
	s := make([]string, len(v))
	for i, od := range v {
		s[i] = ShapeName(od)
	}
	return strings.Join(s, ",")
}

// onDemandSweep runs every (N, shape, series) of the on-demand axis into rep and
// returns the failed ones.
func (e *env) onDemandSweep(ctx context.Context, rep *Report, ser []series, start time.Time) []string {
	var failed []string
	total, k := len(e.o.Clusters)*len(e.o.OnDemand)*len(ser), 0
	for _, n := range e.o.Clusters {
		for _, od := range e.o.OnDemand {
			for _, s := range ser {
				if ctx.Err() != nil {
					return failed
				}
				k++
				e.say("%s on-demand %s N=%d %s%s", progress.Mark(k, total), ShapeName(od), n, s.name, progress.Left(time.Since(start), k-1, total))
				cfg := e.runOnDemand(ctx, s, od, n)
				rep.OnDemand = append(rep.OnDemand, cfg)
				if cfg.Error != "" {
					failed = append(failed, fmt.Sprintf("on-demand %s %s N=%d: %s", cfg.Shape, s.name, n, cfg.Error))
					e.say("[on-demand %s N=%d %s] FAILED: %s", cfg.Shape, n, s.name, cfg.Error)
				}
			}
		}
	}
	return failed
}
