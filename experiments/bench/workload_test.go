package bench

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// sent is what one step must send of one type to one client: responses, resources,
// resources the client already held with that content, and names removed explicitly
// (delta's removed_resources). maybe: the cache does not always owe it to a client (then
// each client gets either nothing of the type or exactly this).
type sent struct {
	responses, resources, redundant, removed int
	maybe                                    bool
}

// wantSent is what change i (>= 1) of workload w must send at N = n, for one client,
// derived from the protocol and the caches, not from the code under test:
//
//   - SotW sends a whole type at a time. LDS and CDS are full state under either cache:
//     every response lists every listener / cluster. With the SnapshotCache, RDS and EDS
//     responses also carry every subscribed resource; the LinearCache sends only the RDS
//     and EDS resources that changed, and nothing for a removal (SotW cannot say it for
//     a type subscribed by name).
//   - SotW with uniform versions moves every type's label on every publish, so all four
//     types go out whatever changed; per-type moves only the changed types.
//   - Delta sends only what changed: the changed resources and, for what went away,
//     removed_resources. With the LinearCache an EDS removal is not always owed: the
//     publisher updates CDS first, and a client that already dropped the cluster has
//     unsubscribed from its endpoints.
//   - A cluster that comes or goes changes RDS too: its route is in the one route
//     configuration. A new cluster's endpoints are sent once the client subscribes to
//     them, after CDS (in SotW the subscription then names m+1 clusters, and with the
//     SnapshotCache the response carries all m+1).
//   - Redundant: what the client already held with the same content (every cluster but
//     the new one, every assignment but the changed one, an unchanged listener or route).
func wantSent(w, cache string, mode protocol.Mode, versions string, n, i int) map[string]sent {
	linear := cache == string(publish.LinearCache)
	uniform := mode == protocol.SotW && versions == string(publish.Uniform)
	delta := mode == protocol.Delta
	one := sent{responses: 1, resources: 1}
	switch w {
	case benchcore.WorkloadEndpoint:
		// One assignment changes.
		switch {
		case delta, linear:
			return map[string]sent{"EDS": one}
		case uniform:
			return map[string]sent{
				"CDS": {1, n, n, 0, false}, "EDS": {1, n, n - 1, 0, false},
				"LDS": {1, 1, 1, 0, false}, "RDS": {1, 1, 1, 0, false},
			}
		default:
			return map[string]sent{"EDS": {1, n, n - 1, 0, false}}
		}
	case benchcore.WorkloadClusterAdd:
		m := n + i - 1 // clusters before the change
		switch {
		case delta:
			return map[string]sent{"CDS": one, "EDS": one, "RDS": one}
		case linear:
			return map[string]sent{"CDS": {1, m + 1, m, 0, false}, "EDS": one, "RDS": one}
		case uniform:
			return map[string]sent{
				"CDS": {1, m + 1, m, 0, false}, "EDS": {1, m + 1, m, 0, false},
				"LDS": {1, 1, 1, 0, false}, "RDS": one,
			}
		default:
			return map[string]sent{"CDS": {1, m + 1, m, 0, false}, "EDS": {1, m + 1, m, 0, false}, "RDS": one}
		}
	case benchcore.WorkloadClusterRemove:
		m := n - i + 1 // clusters before the change
		gone := sent{responses: 1, removed: 1}
		switch {
		case delta && linear:
			return map[string]sent{"CDS": gone, "EDS": {1, 0, 0, 1, true}, "RDS": one}
		case delta:
			return map[string]sent{"CDS": gone, "EDS": gone, "RDS": one}
		case linear:
			return map[string]sent{"CDS": {1, m - 1, m - 1, 0, false}, "RDS": one}
		case uniform:
			return map[string]sent{
				"CDS": {1, m - 1, m - 1, 0, false}, "EDS": {1, m - 1, m - 1, 0, false},
				"LDS": {1, 1, 1, 0, false}, "RDS": one,
			}
		default:
			return map[string]sent{"CDS": {1, m - 1, m - 1, 0, false}, "EDS": {1, m - 1, m - 1, 0, false}, "RDS": one}
		}
	case benchcore.WorkloadRoute:
		// The one route configuration changes.
		if uniform {
			return map[string]sent{
				"CDS": {1, n, n, 0, false}, "EDS": {1, n, n, 0, false},
				"LDS": {1, 1, 1, 0, false}, "RDS": one,
			}
		}
		return map[string]sent{"RDS": one}
	case benchcore.WorkloadListener:
		// The one listener changes.
		if uniform {
			return map[string]sent{
				"CDS": {1, n, n, 0, false}, "EDS": {1, n, n, 0, false},
				"LDS": one, "RDS": {1, 1, 1, 0, false},
			}
		}
		return map[string]sent{"LDS": one}
	}
	panic("unknown workload " + w)
}

// wantProof is what a request must get after change i of workload w at N = n (the
// initial state: /quote/0 on endpoint-a): path, backend ("" for Envoy's own 404),
// status, and for the listener the server header.
func wantProof(w string, n, i int) (path, backend string, status int, server string) {
	alt := []string{"endpoint-a", "endpoint-b"}[i%2]
	switch w {
	case benchcore.WorkloadClusterAdd:
		return fmt.Sprintf("/quote/%d", n+i-1), alt, 200, "envoy"
	case benchcore.WorkloadClusterRemove:
		return fmt.Sprintf("/quote/%d", n-i), "", 404, "envoy"
	case benchcore.WorkloadListener:
		return "/quote/0", "endpoint-a", 200, []string{"bench-server-a", "bench-server-b"}[i%2]
	}
	return "/quote/0", alt, 200, "envoy"
}

// TestWorkloadStructure: every workload, both caches, every series, N = 10 and 1,000,
// against the simulated client: what each change sends per type (wantSent), that the
// client runs it (the sweep checks the simulated data plane: the new backend, 404, the
// server name), the versions it ACKed, and the files.
func TestWorkloadStructure(t *testing.T) {
	testenv.SkipIfShort(t, testenv.NeedsLongRun)
	for _, w := range benchcore.Workloads {
		t.Run(w, func(t *testing.T) {
			rep, dir, progress := sweep(t, benchcore.Options{
				Clusters: []int{10, 1000}, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes, SotWVersions: benchcore.DefaultVersions,
				Caches: []publish.Cache{publish.SnapshotCache, publish.LinearCache}, Workloads: []string{w}, Repeat: 2,
			})
			require.Len(t, rep.Configs, 2*5, "2 N x (3 snapshot series + 2 linear)")
			assert.Contains(t, progress, "bench: note: sotw-uniform is not run with --cache linear")
			checkStructure(t, rep, 1)
			checkFiles(t, rep, dir)
			for _, c := range rep.Configs {
				assert.Equal(t, w, c.Workload)
				assert.Equal(t, strings.HasSuffix(c.Series, "/linear"), c.Cache == string(publish.LinearCache), c.Series)
				if w != benchcore.WorkloadEndpoint {
					assert.Equal(t, "xds-"+w+"-"+SeriesID(c.Series)+"-N"+itoa(c.N)+".log", c.Log)
				}
				assert.FileExists(t, filepath.Join(dir, c.Log))
				for i, s := range append([]Sample{c.Initial}, c.Updates...) {
					what := fmt.Sprintf("%s %s N=%d %s", w, c.Series, c.N, s.Step)
					path, backend, status, server := wantProof(w, c.N, i)
					if i == 0 {
						path, backend, status, server = wantProof(benchcore.WorkloadEndpoint, c.N, 0)
						if w == benchcore.WorkloadListener {
							server = "bench-server-a"
						}
					}
					assert.Equal(t, path, s.Path, what)
					assert.Equal(t, backend, s.Backend, what)
					assert.Equal(t, status, s.SimulatedStatus, what)
					assert.Equal(t, server, s.SimulatedServer, what)
					wantClusters := map[string]int{benchcore.WorkloadClusterAdd: c.N + i, benchcore.WorkloadClusterRemove: c.N - i}[w]
					if wantClusters == 0 {
						wantClusters = c.N
					}
					assert.Equal(t, wantClusters, s.Clusters, what)
				}
				// The versions: SotW under the LinearCache ACKs the cache's own versions,
				// not the bench's labels.
				if c.Cache == string(publish.LinearCache) {
					for _, s := range c.Updates {
						assert.NotEqual(t, s.Version, lastAckedVersion(t, dir, c, s.Step), "%s %s acked the label", c.Series, s.Step)
					}
				}
			}
			// SotW per-type sends more than delta under the snapshot cache wherever the
			// change touches a type of N resources.
			if w == benchcore.WorkloadEndpoint || w == benchcore.WorkloadClusterAdd || w == benchcore.WorkloadClusterRemove {
				for _, r := range rep.Ratios {
					if r.Cache == string(publish.SnapshotCache) && r.N == 1000 {
						assert.Greater(t, r.Ratios["resources"], 10.0, "%s %s", r.Series, w)
					}
				}
			}
		})
	}
}

// lastAckedVersion is the sent version of the last ACK in step of c's xds.log.
func lastAckedVersion(t *testing.T, dir string, c *Config, step string) string {
	t.Helper()
	ev, _, err := xdslog.ReadFile(filepath.Join(dir, c.Log))
	require.NoError(t, err)
	v := ""
	for _, e := range ev {
		if e.Event == xdslog.EventAck && e.Step == step {
			v = e.SentVersion
		}
	}
	require.NotEmpty(t, v, "%s %s: no ACK", c.Log, step)
	return v
}

// TestWorkloadFanOut: the fan-out clients subscribe and unsubscribe like Envoy, so a
// cluster removal under both caches sends k times what it sends one client.
func TestWorkloadFanOut(t *testing.T) {
	const k = 3
	rep, dir, _ := sweep(t, benchcore.Options{
		Clusters: []int{10}, Clients: k, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes, SotWVersions: []publish.VersionStrategy{publish.PerType},
		Caches: []publish.Cache{publish.SnapshotCache, publish.LinearCache}, Workloads: []string{benchcore.WorkloadClusterAdd, benchcore.WorkloadClusterRemove}, Repeat: 1,
	})
	require.Len(t, rep.Configs, 2*4)
	checkStructure(t, rep, k)
	checkFiles(t, rep, dir)
}

// TestWorkloadEnvoy: every workload with both caches against real Envoy at N = 10: the
// data plane shows each change (the new backend answers, the removed path gets Envoy's
// own 404, the new server header), with no NACK. Required under CI=true.
func TestWorkloadEnvoy(t *testing.T) {
	envoytest.Require(t)
	rep, dir, _ := sweep(t, benchcore.Options{
		Clusters: []int{10}, Client: benchcore.ClientEnvoy, Modes: benchcore.DefaultModes, SotWVersions: benchcore.DefaultVersions,
		Caches: []publish.Cache{publish.SnapshotCache, publish.LinearCache}, Workloads: benchcore.Workloads, Repeat: 2,
	})
	require.Len(t, rep.Configs, len(benchcore.Workloads)*5)
	checkFiles(t, rep, dir)
	for _, c := range rep.Configs {
		require.Empty(t, c.Error)
		for i, s := range append([]Sample{c.Initial}, c.Updates...) {
			what := fmt.Sprintf("%s %s %s", c.Workload, c.Series, s.Step)
			path, backend, status, server := wantProof(c.Workload, c.N, i)
			if i == 0 {
				path, backend, status, server = wantProof(benchcore.WorkloadEndpoint, c.N, 0)
				if c.Workload == benchcore.WorkloadListener {
					server = "bench-server-a"
				}
			}
			assert.Zero(t, s.Nacks, what)
			assert.Equal(t, path, s.Path, what)
			require.NotNil(t, s.DataPlaneMS, "%s: the change never showed", what)
			require.NotNil(t, s.Answer, what)
			assert.Equal(t, benchcore.Answer{Status: status, Backend: backend, Server: server}, *s.Answer, what)
			// What was sent is the workload's change (wantSent's types), and the
			// initial push is the whole state.
			if i > 0 {
				var types []string
				for typ := range wantSent(c.Workload, c.Cache, c.Mode, c.Versions, c.N, i) {
					types = append(types, typ)
				}
				for typ := range s.ByType {
					assert.Contains(t, types, typ, "%s: sent %s", what, typ)
				}
			}
		}
	}
}
