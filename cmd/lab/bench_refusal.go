package main

import (
	"errors"
	"fmt"

	"github.com/xds-workbench/lab/experiments/bench"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/resources"
)

// benchFlagOf is the flag of each option a bench.OptionError names: the bench knows
// options, only the CLI knows flags.
var benchFlagOf = map[string]string{
	bench.OptionClusters:      "clusters",
	bench.OptionClients:       "clients",
	bench.OptionStuckClients:  "stuck-clients",
	bench.OptionClient:        "client",
	bench.OptionEnvoys:        "envoys",
	bench.OptionEnvoyStats:    "envoy-stats",
	bench.OptionUnprobed:      "unprobed",
	bench.OptionModes:         "modes",
	bench.OptionSotWVersions:  "sotw-versions",
	bench.OptionRepeat:        "repeat",
	bench.OptionCaches:        "cache",
	bench.OptionWorkloads:     "workload",
	bench.OptionThrough:       "through",
	bench.OptionTimeout:       "timeout",
	bench.OptionOnDemand:      "on-demand",
	bench.OptionColdHosts:     "cold-hosts",
	bench.OptionChurn:         "churn",
	bench.OptionChurnRequests: "churn-requests",
	bench.OptionConnCost:      "conn-cost",
}

// benchRefusal words a refusal of the bench library as `lab bench` prints it: on the
// flag of the option it names, "--flag VALUE: what is wrong", the value as the user
// typed it when typed says so (typed is nil for options built in code, runBench's
// callers). b is what was validated; other errors pass unchanged.
func benchRefusal(err error, b bench.Options, typed func(flag string) (string, bool)) error {
	var oe *bench.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	flag, ok := benchFlagOf[oe.Option]
	if !ok {
		return err
	}
	value := oe.Value
	if typed != nil {
		if v, ok := typed(flag); ok {
			value = v
		}
	}
	// Options built in code have no typed flag to blame: name both sides.
	if typed == nil && errors.Is(oe, bench.ErrFleetWithFanOut) {
		return fmt.Errorf("--envoys %d with --clients %d: give one or the other (several Envoys, or fan-out clients with --client sim)", b.Envoys, b.Clients)
	}
	return &flagError{flag: flag, value: value, err: reworded{benchReason(oe, b), oe.Err}}
}

// benchReason is what is wrong, in the CLI's words: the rules between options name the
// other option's flag.
func benchReason(oe *bench.OptionError, b bench.Options) string {
	var outside *bench.RangeError
	switch {
	case errors.Is(oe, grpcclient.ErrNoDelta):
		return "with --client grpc: " + grpcclient.ErrNoDelta.Error() + "; want --modes sotw"
	case errors.Is(oe, bench.ErrUniformNeedsSnapshot):
		return "needs --cache snapshot: each LinearCache versions its own type (want per-type with --cache linear, or --cache snapshot,linear)"
	case errors.Is(oe, bench.ErrRouteNeedsTwo):
		return "the route workload points route 0 at cluster 1 (want every count at least 2)"
	case errors.Is(oe, bench.ErrRemoveNeedsRoom):
		return "the cluster-remove workload removes one cluster per repeat and keeps one (want below every --clusters count, the smallest is " + oe.Item + ")"
	case errors.Is(oe, bench.ErrFleetWithFanOut):
		return fmt.Sprintf("cannot be combined with --clients %d (want several Envoys, or fan-out clients with --client sim)", b.Clients)
	case errors.Is(oe, bench.ErrFleetNeedsEnvoy):
		return "more than one Envoy needs --client envoy (got --client " + b.Client + ")"
	case errors.Is(oe, bench.ErrFanOutNeedsSim):
		return "more than one client needs --client sim (the bench runs one Envoy)"
	case errors.Is(oe, bench.ErrStatsNeedEnvoy):
		return "needs --client envoy (got --client " + b.Client + ")"
	case errors.Is(oe, bench.ErrUnprobedOnDemand):
		return "the on-demand sequence has its own states (drop --on-demand or --unprobed)"
	case errors.Is(oe, bench.ErrNotOnDemand):
		return oe.Item + " is not measured on demand: the on-demand sequence measures endpoint (a one-service change) and cluster-add (a service add); want those or no --workload"
	case errors.Is(oe, bench.ErrGRPCEndpointOnly):
		return "--client grpc runs the endpoint workload only (the others prove the change by Envoy's server header or 404)"
	case errors.Is(oe, resources.ErrOnDemandNeedsDelta):
		return fmt.Sprintf("--on-demand %s runs delta only (want --modes delta): %v", oe.Item, resources.ErrOnDemandNeedsDelta)
	case oe.Option == bench.OptionEnvoys && errors.As(oe, &outside) && b.Client != bench.ClientGRPC:
		return fmt.Sprintf("outside 1-%d (up to %d with --client grpc)", bench.MaxEnvoys, bench.MaxGRPCClients)
	}
	return oe.Err.Error()
}

// reworded is a library error in the CLI's words; it still unwraps to the library's.
type reworded struct {
	text string
	err  error
}

func (r reworded) Error() string { return r.text }
func (r reworded) Unwrap() error { return r.err }
