package benchcore

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
)

// The option names an *OptionError carries: the Options fields in words. The bench
// knows nothing of flags; the CLI maps each name to its flag.
const (
	OptionClusters     = "clusters"
	OptionClients      = "clients"
	OptionClient       = "client"
	OptionEnvoys       = "envoys"
	OptionEnvoyStats   = "envoy stats"
	OptionUnprobed     = "unprobed"
	OptionModes        = "modes"
	OptionSotWVersions = "sotw versions"
	OptionRepeat       = "repeat"
	OptionCaches       = "caches"
	OptionWorkloads    = "workloads"
	OptionThrough      = "through"
	OptionTimeout      = "timeout"
	OptionOnDemand     = "on demand"
	OptionColdHosts    = "cold hosts"
	OptionStuckClients = "stuck clients"
)

// OptionError is an option value the bench refuses (option.Error): Option is one of
// the Option constants; Err one of the rule errors below when another option's value is
// the reason, so a caller can word the refusal in its own terms (the CLI names flags).
type OptionError = option.Error

// RangeError is a count outside its bounds.
type RangeError = option.RangeError

// The rules between options: an *OptionError wraps one when another option's value is
// why its option is refused.
var (
	// ErrUniformNeedsSnapshot: the only cache is one that versions each type itself
	// (controlplane.CheckCacheOptions), and uniform is the only SotW strategy.
	ErrUniformNeedsSnapshot = errors.New("uniform needs the snapshot cache: each LinearCache versions its own type")
	// ErrRouteNeedsTwo: the route workload retargets route 0 at cluster 1.
	ErrRouteNeedsTwo = errors.New("the route workload points route 0 at cluster 1, so every count must be at least 2")
	// ErrRemoveNeedsRoom: cluster-remove removes one cluster per repeat and keeps one.
	ErrRemoveNeedsRoom = errors.New("the cluster-remove workload removes one cluster per repeat and keeps at least one, so every cluster count must be above the repeat")
	// ErrFleetWithFanOut: several Envoys and fan-out clients at once.
	ErrFleetWithFanOut = errors.New("several Envoys and fan-out clients cannot be combined")
	// ErrFleetNeedsEnvoy: several data planes need real Envoys or grpc-go clients.
	ErrFleetNeedsEnvoy = errors.New("more than one Envoy needs the envoy client")
	// ErrFanOutNeedsSim: fan-out clients are simulated.
	ErrFanOutNeedsSim = errors.New("more than one client needs the simulated client (the bench runs one Envoy)")
	// ErrStuckNeedsSim: stuck clients sit beside the simulated clients, whose ACKs
	// the bench counts per stream.
	ErrStuckNeedsSim = errors.New("stuck clients need the simulated client")
	// ErrStatsNeedEnvoy: an Envoy stats setting other than all needs real Envoy.
	ErrStatsNeedEnvoy = errors.New("an Envoy stats setting needs the envoy client")
	// ErrUnprobedOnDemand: the on-demand sequence builds its own states.
	ErrUnprobedOnDemand = errors.New("the on-demand sequence has its own states")
	// ErrNotOnDemand: a workload the on-demand sequence does not measure.
	ErrNotOnDemand = errors.New("the on-demand sequence measures endpoint (a one-service change) and cluster-add (a service add)")
	// ErrGRPCEndpointOnly: the grpc-go client proves a change by the backend that
	// answers, so only the endpoint workload.
	ErrGRPCEndpointOnly = errors.New("the grpc client runs the endpoint workload only (the others prove the change by Envoy's server header or 404)")
)

func refuse(option, value string, err error) *OptionError {
	return &OptionError{Option: option, Value: value, Err: err}
}

// Validate checks o and fills defaults; every refusal is an *OptionError. Each option
// is checked alone first, then the rules between options, in the order the CLI has
// always reported them.
func (o *Options) Validate() error {
	for _, check := range []func() error{
		o.checkClusters, o.checkClients, o.checkStuckClients, o.checkClient, o.checkEnvoys, o.checkEnvoyStats,
		o.checkUnprobed, o.checkModes, o.checkSotWVersions, o.checkRepeat, o.checkCaches,
		o.checkWorkloads, o.checkThrough, o.checkTimeout,
		o.checkUniformCache, o.checkWorkloadsFit, o.checkFleet, o.checkStuckClient, o.checkEnvoyStatsClient,
		o.checkUnprobedOnDemand, o.validateOnDemand, o.validateChurn, o.validateGRPC,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	if o.Out == "" {
		o.Out = DefaultOut()
	}
	return nil
}

// checkList refuses an empty list (saying want), an element parse refuses, and an
// element listed twice.
func checkList[T comparable](option string, list []T, want string, parse func(T) error) error {
	if len(list) == 0 {
		return refuse(option, "", errors.New(want))
	}
	seen := map[T]bool{}
	for _, v := range list {
		err := parse(v)
		if err == nil && seen[v] {
			err = fmt.Errorf("%v is listed twice", v)
		}
		if err != nil {
			return &OptionError{Option: option, Value: joinList(list), Item: fmt.Sprint(v), Err: err}
		}
		seen[v] = true
	}
	return nil
}

func joinList[T any](list []T) string {
	s := make([]string, len(list))
	for i, v := range list {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}

// checkClusters: each count in 1..MaxClusters, once; sorted, so the sweep grows.
func (o *Options) checkClusters() error {
	err := checkList(OptionClusters, o.Clusters, "give at least one cluster count", func(n int) error {
		if n < 1 || n > MaxClusters {
			return fmt.Errorf("%d is %w", n, &RangeError{Min: 1, Max: MaxClusters})
		}
		return nil
	})
	o.Clusters = slices.Sorted(slices.Values(o.Clusters))
	return err
}

func (o *Options) checkClients() error {
	if o.Clients == 0 {
		o.Clients = 1
	}
	return checkCount(OptionClients, o.Clients, MaxClients)
}

func (o *Options) checkStuckClients() error {
	if o.StuckClients < 0 || o.StuckClients > MaxStuckClients {
		return refuse(OptionStuckClients, fmt.Sprint(o.StuckClients), &RangeError{Min: 0, Max: MaxStuckClients})
	}
	return nil
}

// checkStuckClient: the stuck clients are simulated, beside simulated clients.
func (o *Options) checkStuckClient() error {
	if o.StuckClients > 0 && o.Client != ClientSim {
		return refuse(OptionStuckClients, fmt.Sprint(o.StuckClients), fmt.Errorf("%w (got %s)", ErrStuckNeedsSim, o.Client))
	}
	return nil
}

// checkCount refuses n outside 1..most.
func checkCount(option string, n, most int) error {
	if n < 1 || n > most {
		return refuse(option, fmt.Sprint(n), &RangeError{Min: 1, Max: most})
	}
	return nil
}

func (o *Options) checkClient() error {
	switch o.Client {
	case "":
		o.Client = ClientEnvoy
	case ClientEnvoy, ClientSim, ClientGRPC:
	default:
		return refuse(OptionClient, o.Client, errors.New("unknown client (want envoy, grpc or sim)"))
	}
	return nil
}

// checkEnvoys: up to MaxEnvoys Envoys, or MaxGRPCClients grpc-go clients.
func (o *Options) checkEnvoys() error {
	if o.Envoys == 0 {
		o.Envoys = 1
	}
	if o.Client == ClientGRPC {
		return checkCount(OptionEnvoys, o.Envoys, MaxGRPCClients)
	}
	return checkCount(OptionEnvoys, o.Envoys, MaxEnvoys)
}

func (o *Options) checkEnvoyStats() error {
	if err := bootstrap.CheckStats(o.EnvoyStats); err != nil {
		return refuse(OptionEnvoyStats, o.EnvoyStats, err)
	}
	if o.EnvoyStats == "" {
		o.EnvoyStats = bootstrap.StatsAll
	}
	return nil
}

func (o *Options) checkUnprobed() error {
	if o.Unprobed == "" {
		o.Unprobed = UnprobedDeadPort
	}
	if !slices.Contains(UnprobedSettings, o.Unprobed) {
		return refuse(OptionUnprobed, o.Unprobed, fmt.Errorf("unknown setting (want %s or %s)", UnprobedDeadPort, UnprobedNoEndpoints))
	}
	return nil
}

// checkModes is the bench's one check of its protocols.
func (o *Options) checkModes() error {
	return checkList(OptionModes, o.Modes, "give sotw, delta or both", protocol.Mode.Check)
}

// checkSotWVersions: the strategies matter with SotW only.
func (o *Options) checkSotWVersions() error {
	if !slices.Contains(o.Modes, protocol.SotW) {
		return nil
	}
	return checkList(OptionSotWVersions, o.SotWVersions, "give uniform, per-type or both", func(v publish.VersionStrategy) error {
		if _, err := publish.ParseVersionStrategy(string(v)); err != nil || v == "" {
			return fmt.Errorf("unknown strategy %q (want uniform or per-type)", v)
		}
		return nil
	})
}

func (o *Options) checkRepeat() error { return checkCount(OptionRepeat, o.Repeat, MaxRepeat) }

func (o *Options) checkCaches() error {
	if len(o.Caches) == 0 {
		o.Caches = slices.Clone(DefaultCaches)
	}
	return checkList(OptionCaches, o.Caches, "", func(c publish.Cache) error {
		if c == "" {
			return errors.New("empty cache name (" + publish.CacheWant + ")")
		}
		if _, err := publish.ParseCache(string(c)); err != nil {
			return fmt.Errorf("unknown cache %q (%s)", c, publish.CacheWant)
		}
		return nil
	})
}

func (o *Options) checkWorkloads() error {
	if len(o.Workloads) == 0 {
		o.Workloads = slices.Clone(DefaultWorkloads)
	}
	return checkList(OptionWorkloads, o.Workloads, "", parseWorkload)
}

func (o *Options) checkThrough() error {
	if len(o.Through) == 0 {
		o.Through = slices.Clone(DefaultThrough)
	}
	return checkList(OptionThrough, o.Through, "", func(t string) error {
		if t != ThroughDirect && t != ThroughTap {
			return fmt.Errorf("unknown way %q (want direct or tap)", t)
		}
		return nil
	})
}

func (o *Options) checkTimeout() error {
	if o.Timeout < 0 {
		return refuse(OptionTimeout, o.Timeout.String(), errors.New("negative"))
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	return nil
}

// checkUniformCache refuses SotW with uniform versions alone under one cache that
// cannot honour it (controlplane.CheckCacheOptions): nothing would measure SotW. With
// another strategy or cache, series leaves the refused series out with a note.
func (o *Options) checkUniformCache() error {
	if !slices.Contains(o.Modes, protocol.SotW) || len(o.Caches) != 1 ||
		!slices.Equal(o.SotWVersions, []publish.VersionStrategy{publish.Uniform}) {
		return nil
	}
	if controlplane.CheckCacheOptions(o.Caches[0], protocol.SotW, publish.Uniform, "") == nil {
		return nil
	}
	return refuse(OptionSotWVersions, string(publish.Uniform), fmt.Errorf("%w (cache %s)", ErrUniformNeedsSnapshot, o.Caches[0]))
}

// checkWorkloadsFit checks what the workloads, in order, need of the cluster counts.
func (o *Options) checkWorkloadsFit() error {
	smallest := o.Clusters[0] // sorted
	for _, w := range o.Workloads {
		switch {
		case w == WorkloadRoute && smallest < 2:
			return &OptionError{Option: OptionClusters, Value: joinList(o.Clusters), Item: fmt.Sprint(smallest), Err: fmt.Errorf("%w (got %d)", ErrRouteNeedsTwo, smallest)}
		case w == WorkloadClusterRemove && smallest <= o.Repeat:
			return &OptionError{Option: OptionRepeat, Value: fmt.Sprint(o.Repeat), Item: fmt.Sprint(smallest), Err: fmt.Errorf("%w (the smallest count is %d)", ErrRemoveNeedsRoom, smallest)}
		}
	}
	return nil
}

// checkFleet: several Envoys (or grpc-go clients) and fan-out clients are two ways of
// serving many, one at a time, each with its own client.
func (o *Options) checkFleet() error {
	switch {
	case o.Envoys > 1 && o.Clients > 1:
		return refuse(OptionEnvoys, fmt.Sprint(o.Envoys), fmt.Errorf("%w (clients %d)", ErrFleetWithFanOut, o.Clients))
	case o.Envoys > 1 && o.Client != ClientEnvoy && o.Client != ClientGRPC:
		return refuse(OptionEnvoys, fmt.Sprint(o.Envoys), fmt.Errorf("%w (got %s)", ErrFleetNeedsEnvoy, o.Client))
	case o.Clients > 1 && o.Client != ClientSim:
		return refuse(OptionClients, fmt.Sprint(o.Clients), fmt.Errorf("%w (got %s)", ErrFanOutNeedsSim, o.Client))
	}
	return nil
}

func (o *Options) checkEnvoyStatsClient() error {
	if o.EnvoyStats != bootstrap.StatsAll && o.Client != ClientEnvoy {
		return refuse(OptionEnvoyStats, o.EnvoyStats, fmt.Errorf("%w (got %s)", ErrStatsNeedEnvoy, o.Client))
	}
	return nil
}

func (o *Options) checkUnprobedOnDemand() error {
	if o.Unprobed != UnprobedDeadPort && len(o.OnDemand) > 0 {
		return refuse(OptionUnprobed, o.Unprobed, ErrUnprobedOnDemand)
	}
	return nil
}

// validateGRPC checks what the grpc-go client cannot run: delta (grpc-go has no delta
// client: grpcclient.ErrNoDelta) and the workloads whose proof is Envoy's own (the
// listener's server header, Envoy's 404): it runs the endpoint workload, whose proof is
// which backend answered the RPC. (Fan-out clients are refused by checkFleet.)
func (o *Options) validateGRPC() error {
	if o.Client != ClientGRPC {
		return nil
	}
	if slices.Contains(o.Modes, protocol.Delta) {
		return refuse(OptionModes, joinList(o.Modes), grpcclient.ErrNoDelta)
	}
	for _, w := range o.Workloads {
		if w != WorkloadEndpoint {
			return &OptionError{Option: OptionWorkloads, Value: strings.Join(o.Workloads, ","), Item: w, Err: ErrGRPCEndpointOnly}
		}
	}
	return nil
}
