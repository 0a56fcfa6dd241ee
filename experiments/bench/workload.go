package bench

import (
	"fmt"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
)

// serverNames are the listener workload's two server_names: the initial listener has
// the first, odd changes the second.
var serverNames = [2]string{"bench-server-a", "bench-server-b"}

// workloadDoc says in a few words what each workload changes and what proves it, for the
// report.
var workloadDoc = map[string]string{
	benchcore.WorkloadEndpoint:      "cluster 0's endpoint moves between backends A and B; proof: /quote/0 answered by the new backend",
	benchcore.WorkloadClusterAdd:    "one cluster is added with its endpoint and route; proof: its path answered by its backend",
	benchcore.WorkloadClusterRemove: "the last cluster is removed with its endpoint and route; proof: its path gets Envoy's 404 (no route)",
	benchcore.WorkloadRoute:         "route /quote/0 alternates between cluster 1 (backend B) and cluster 0 (backend A); proof: the other backend answers",
	benchcore.WorkloadListener:      "the HTTP connection manager's server_name alternates; proof: the server header of an answer on /quote/0",
}

// workloadChange names one change of a workload in the report's titles.
var workloadChange = map[string]string{
	benchcore.WorkloadEndpoint:      "single-endpoint change",
	benchcore.WorkloadClusterAdd:    "cluster added",
	benchcore.WorkloadClusterRemove: "cluster removed",
	benchcore.WorkloadRoute:         "route retargeted",
	benchcore.WorkloadListener:      "listener change",
}

// ports are where a workload's states point: Envoy's listener, the port nothing listens
// on (every cluster that is not probed, unless unlistedEmpty gives those no endpoint),
// and backends A and B.
type ports struct {
	listener      int
	dead          int
	unlistedEmpty bool
	backends      [2]int
}

// wstep is one state of a workload and what proves the data plane runs it.
type wstep struct {
	state resources.State
	proof proof
}

// proof is the data-plane evidence of a step: the answer a request to path must get.
type proof struct {
	path string
	// backend is the index of the backend that must answer, or noBackend: Envoy itself
	// must answer 404 (no route).
	backend int
	// server is the "server" header the answer must carry ("": not checked).
	server string
}

const noBackend = -1

// workloadStep is step i of workload w at N = n: i = 0 is the initial state (N
// clusters, cluster 0 on backend A, every other cluster on the dead port or none; besides, the
// route workload puts cluster 1 on backend B and the listener workload names the
// server), i >= 1 the i-th change. It only describes the desired state;
// configRun.publish builds it.
func workloadStep(w string, n, i int, p ports) wstep {
	st := resources.State{
		Version: fmt.Sprint(i + 1), ListenerPort: p.listener, InventoryPort: p.dead,
		Clusters: n, EndpointPorts: map[int]int{0: p.backends[0]}, UnlistedEmpty: p.unlistedEmpty,
	}
	ps := proof{path: resources.ScaledPath(0), backend: 0}
	alt := i % 2 // 1, 0, 1, ...: every change is a real one
	switch w {
	case benchcore.WorkloadEndpoint:
		if i > 0 {
			st.EndpointPorts[0] = p.backends[alt]
			ps.backend = alt
		}
	case benchcore.WorkloadClusterAdd:
		// Cluster n+k-1 came with change k and keeps its endpoint: only the new one is new.
		st.Clusters = n + i
		for k := 1; k <= i; k++ {
			st.EndpointPorts[n+k-1] = p.backends[k%2]
		}
		if i > 0 {
			ps = proof{path: resources.ScaledPath(n + i - 1), backend: alt}
		}
	case benchcore.WorkloadClusterRemove:
		// The last cluster goes with its route; Validate keeps at least cluster 0.
		st.Clusters = n - i
		if i > 0 {
			ps = proof{path: resources.ScaledPath(n - i), backend: noBackend}
		}
	case benchcore.WorkloadRoute:
		st.EndpointPorts[1] = p.backends[1]
		if alt == 1 {
			st.RouteTargets = map[int]int{0: 1}
		}
		ps.backend = alt
	case benchcore.WorkloadListener:
		st.ServerName = serverNames[alt]
		ps.server = serverNames[alt]
	}
	return wstep{state: st, proof: ps}
}

// changedCluster is the cluster whose endpoint, route or existence the workload's first
// change touches (bench.json's changed_cluster).
func changedCluster(w string, n int) int {
	switch w {
	case benchcore.WorkloadClusterAdd:
		return n
	case benchcore.WorkloadClusterRemove:
		return n - 1
	}
	return 0
}

// wildcardType: LDS and CDS are subscribed by wildcard and are full state in SotW, so a
// removal is a change the client is always told about (the full list, or delta's
// removed_resources); RDS and EDS are subscribed by name.
func wildcardType(t resources.Type) bool { return t == resources.LDS || t == resources.CDS }

// expectedTypes are the types every client must ACK at the type's new version after set
// replaces prev:
//   - all four at first, and for SotW with uniform versions (every label moves);
//   - else the types whose content changed (ChangedTypes), except, with the LinearCache,
//     an RDS or EDS change that only removes resources: SotW cannot say so for a type
//     subscribed by name (the LinearCache sends nothing), and in delta the publisher
//     updates CDS before EDS, so a client that has already dropped the cluster's
//     endpoints is owed nothing either (the SnapshotCache sets every type at once and
//     always answers). Those removals are awaited as the client's unsubscribe instead
//     (droppedNames).
func expectedTypes(s benchcore.Series, set, prev *resources.Set) []string {
	ts := resources.CoreTypes
	if prev != nil && !(s.Mode == protocol.SotW && s.Versions == publish.Uniform) {
		ts = nil
		change := resources.Diff(prev, set)
		for _, t := range change.Types() {
			if s.Cache.VersionsPerType() && !wildcardType(t) && onlyRemovals(change, t) {
				continue
			}
			ts = append(ts, t)
		}
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// onlyRemovals reports whether type t lost resources from prev to set and nothing else
// (from the change: O(what changed)).
func onlyRemovals(change resources.Change, t resources.Type) bool {
	removed := false
	for _, e := range change.Edits {
		if e.Type != t {
			continue
		}
		if e.New != nil {
			return false
		}
		removed = true
	}
	return removed
}

// droppedNames are the RDS and EDS resources set no longer has: every client must stop
// subscribing to them (Envoy does when the listener or cluster that referenced them goes)
// before the step is over, or the unsubscribe, and any answer to it, would land in the
// next step. Type -> names.
func droppedNames(set, prev *resources.Set) map[string][]string {
	if prev == nil {
		return nil
	}
	var out map[string][]string
	for _, e := range resources.Diff(prev, set).Edits {
		if e.New != nil || (e.Type != resources.EDS && e.Type != resources.RDS) {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[string(e.Type)] = append(out[string(e.Type)], e.Name)
	}
	return out
}
