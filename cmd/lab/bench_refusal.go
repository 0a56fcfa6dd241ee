package main

import (
	"errors"
	"fmt"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/resources"
)

// benchFlagOf is the flag of each option a bench.OptionError names: the bench knows
// options, only the CLI knows flags.
var benchFlagOf = map[string]string{
	benchcore.OptionClusters:      "clusters",
	benchcore.OptionClients:       "clients",
	benchcore.OptionStuckClients:  "stuck-clients",
	benchcore.OptionClient:        "client",
	benchcore.OptionEnvoys:        "envoys",
	benchcore.OptionEnvoyStats:    "envoy-stats",
	benchcore.OptionUnprobed:      "unprobed",
	benchcore.OptionModes:         "modes",
	benchcore.OptionSotWVersions:  "sotw-versions",
	benchcore.OptionRepeat:        "repeat",
	benchcore.OptionCaches:        "cache",
	benchcore.OptionWorkloads:     "workload",
	benchcore.OptionThrough:       "through",
	benchcore.OptionTimeout:       "timeout",
	benchcore.OptionOnDemand:      "on-demand",
	benchcore.OptionColdHosts:     "cold-hosts",
	benchcore.OptionChurn:         "churn",
	benchcore.OptionChurnRequests: "churn-requests",
	benchcore.OptionConnCost:      "conn-cost",
}

// benchRefusal words a refusal of the bench library as `lab bench` prints it: on the
// flag of the option it names, "--flag VALUE: what is wrong", the value as the user
// typed it when typed says so (typed is nil for options built in code, runBench's
// callers). b is what was validated; other errors pass unchanged.
func benchRefusal(err error, b benchcore.Options, typed func(flag string) (string, bool)) error {
	var oe *benchcore.OptionError
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
	if typed == nil && errors.Is(oe, benchcore.ErrFleetWithFanOut) {
		return fmt.Errorf("--envoys %d with --clients %d: give one or the other (several Envoys, or fan-out clients with --client sim)", b.Envoys, b.Clients)
	}
	return &flagError{flag: flag, value: value, err: reworded{benchReason(oe, b), oe.Err}}
}

// benchReason is what is wrong, in the CLI's words: the rules between options name the
// other option's flag.
func benchReason(oe *benchcore.OptionError, b benchcore.Options) string {
	var outside *benchcore.RangeError
	switch {
	case errors.Is(oe, grpcclient.ErrNoDelta):
		return "with --client grpc: " + grpcclient.ErrNoDelta.Error() + "; want --modes sotw"
	case errors.Is(oe, benchcore.ErrUniformNeedsSnapshot):
		return "needs --cache snapshot: each LinearCache versions its own type (want per-type with --cache linear, or --cache snapshot,linear)"
	case errors.Is(oe, benchcore.ErrRouteNeedsTwo):
		return "the route workload points route 0 at cluster 1 (want every count at least 2)"
	case errors.Is(oe, benchcore.ErrRemoveNeedsRoom):
		return "the cluster-remove workload removes one cluster per repeat and keeps one (want below every --clusters count, the smallest is " + oe.Item + ")"
	case errors.Is(oe, benchcore.ErrFleetWithFanOut):
		return fmt.Sprintf("cannot be combined with --clients %d (want several Envoys, or fan-out clients with --client sim)", b.Clients)
	case errors.Is(oe, benchcore.ErrFleetNeedsEnvoy):
		return "more than one Envoy needs --client envoy (got --client " + b.Client + ")"
	case errors.Is(oe, benchcore.ErrFanOutNeedsSim):
		return "more than one client needs --client sim (the bench runs one Envoy)"
	case errors.Is(oe, benchcore.ErrStatsNeedEnvoy):
		return "needs --client envoy (got --client " + b.Client + ")"
	case errors.Is(oe, benchcore.ErrUnprobedOnDemand):
		return "the on-demand sequence has its own states (drop --on-demand or --unprobed)"
	case errors.Is(oe, benchcore.ErrNotOnDemand):
		return oe.Item + " is not measured on demand: the on-demand sequence measures endpoint (a one-service change) and cluster-add (a service add); want those or no --workload"
	case errors.Is(oe, benchcore.ErrGRPCEndpointOnly):
		return "--client grpc runs the endpoint workload only (the others prove the change by Envoy's server header or 404)"
	case errors.Is(oe, resources.ErrOnDemandNeedsDelta):
		return fmt.Sprintf("--on-demand %s runs delta only (want --modes delta): %v", oe.Item, resources.ErrOnDemandNeedsDelta)
	case oe.Option == benchcore.OptionEnvoys && errors.As(oe, &outside) && b.Client != benchcore.ClientGRPC:
		return fmt.Sprintf("outside 1-%d (up to %d with --client grpc)", benchcore.MaxEnvoys, benchcore.MaxGRPCClients)
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
