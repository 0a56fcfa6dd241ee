package benchcore

import (
	"fmt"

	"github.com/xds-workbench/lab/shared/publish"
)

// Workloads (--workload): what one measured change does to the scaled state.
const (
	// WorkloadEndpoint moves cluster 0's endpoint between backends A and B.
	WorkloadEndpoint = "endpoint"
	// WorkloadClusterAdd adds one cluster with its endpoint and its route per change
	// (N, N+1, ...); the new cluster's endpoint alternates between B and A.
	WorkloadClusterAdd = "cluster-add"
	// WorkloadClusterRemove removes the last cluster with its endpoint and its route per
	// change (N, N-1, ...); its path must then get Envoy's own 404 (no route).
	WorkloadClusterRemove = "cluster-remove"
	// WorkloadRoute points route 0 (/quote/0) at cluster 1 (backend B) and back at
	// cluster 0 (backend A), alternately.
	WorkloadRoute = "route"
	// WorkloadListener changes the HTTP connection manager's server_name, alternately;
	// the "server" header of an answer shows which listener served it.
	WorkloadListener = "listener"
)

// Workloads lists every workload, in the order the sweep runs them.
var Workloads = []string{WorkloadEndpoint, WorkloadClusterAdd, WorkloadClusterRemove, WorkloadRoute, WorkloadListener}

// DefaultWorkloads is today's bench: one endpoint change.
var DefaultWorkloads = []string{WorkloadEndpoint}

// DefaultCaches is today's bench: the snapshot cache.
var DefaultCaches = []publish.Cache{publish.SnapshotCache}

// parseWorkload checks one --workload name.
func parseWorkload(s string) error {
	for _, w := range Workloads {
		if s == w {
			return nil
		}
	}
	return fmt.Errorf("unknown workload %q (want endpoint, cluster-add, cluster-remove, route or listener)", s)
}

// Where the clusters no request uses point (--unprobed).
const (
	// UnprobedDeadPort gives each an endpoint at a loopback port nothing listens on: the
	// default, and what every committed figure before --unprobed used. Envoy never
	// connects to a cluster no request uses; grpc-go does (see UnprobedNoEndpoints).
	UnprobedDeadPort = "dead-port"
	// UnprobedNoEndpoints gives each no endpoint (resources.State.UnlistedEmpty). For
	// grpc-go the difference is large: its round_robin connects at once to every
	// endpoint of every cluster the route names and keeps reconnecting to a dead one,
	// and each of those connectivity changes makes its cluster manager format every
	// child's state (docs/performance.md, "Many grpc-go clients").
	UnprobedNoEndpoints = "no-endpoints"
)

// UnprobedSettings are the values of Options.Unprobed, in the order the CLI lists them.
var UnprobedSettings = []string{UnprobedDeadPort, UnprobedNoEndpoints}
