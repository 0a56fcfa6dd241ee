package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// readJSON reads the JSON file at path into a T; msgAndArgs say what failed to parse.
func readJSON[T any](t *testing.T, path string, msgAndArgs ...any) T {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var v T
	require.NoError(t, json.Unmarshal(b, &v), msgAndArgs...)
	return v
}

// readCheckpoint reads the checkpoint name from a run's dir and requires it passed.
func readCheckpoint(t *testing.T, dir, name string) Checkpoint {
	t.Helper()
	c := rawCheckpoint(t, dir, name)
	require.True(t, c.Passed, "%s passed: %+v", name, c.Checks)
	return c
}

func readLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func logEvents(t *testing.T, dir string) []xdslog.Event {
	t.Helper()
	ev, st, err := xdslog.ReadFile(dir)
	require.NoError(t, err)
	require.Zero(t, st.Skipped, st.FirstSkip)
	return ev
}

func eventsOf(ev []xdslog.Event, step, kind, typ string) []xdslog.Event {
	var out []xdslog.Event
	for _, e := range ev {
		if e.Step == step && e.Event == kind && (typ == "" || e.Type == typ) {
			out = append(out, e)
		}
	}
	return out
}

func assertBackend(t *testing.T, o *Observation, status int, backend string) {
	t.Helper()
	require.NotNil(t, o)
	assert.Equal(t, status, o.Status)
	assert.Equal(t, backend, o.BodyBackend, "backend named in the body")
	assert.Equal(t, backend, o.LogBackend, "backend whose own log has the request ID")
}

// TestRunEnvoy runs the whole scenario against real Envoy in each mode, on free ports,
// and asserts every checkpoint from the evidence files alone.
func TestRunEnvoy(t *testing.T) {
	envoytest.Require(t)
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := Execute(ctx, Options{Mode: mode, Client: ClientEnvoy, Out: dir, StepTimeout: 40 * time.Second, StrictClientView: true})
			require.NoError(t, err)
			require.True(t, res.Passed)
			assert.Equal(t, "PASS", readLine(t, filepath.Join(dir, "envoy.result")))
			assert.Equal(t, "0", readLine(t, filepath.Join(dir, "run.exit")))
			for _, f := range []string{"xds.log", "run.json", "summary.json", "envoy.log", "access.log", "inventory-v1.log", "inventory-v2.log", "bootstrap.yaml"} {
				assert.FileExists(t, filepath.Join(dir, f))
			}
			for _, st := range teachingSteps(t) {
				assert.FileExists(t, filepath.Join(dir, st.Name+"-config.json"))
			}
			ev := logEvents(t, dir)
			assertClientViewsAgree(t, dir, teachingSteps(t), ev)

			initial := readCheckpoint(t, dir, "initial")
			assertBackend(t, initial.Request, 200, "v1")
			require.NotNil(t, initial.Request.Access, "Envoy's access-log line for the request ID")
			assert.Equal(t, initial.Request.RequestID, initial.Request.Access.RequestID)
			assert.Equal(t, "inventory", initial.Request.Access.UpstreamCluster)
			assert.False(t, initial.Request.Simulated)
			assert.Equal(t, "1", initial.EnvoyStats["control_plane.connected_state"])
			require.Len(t, initial.Accepted, 1)
			assert.Len(t, initial.Accepted[0].Accepted["CDS"], 1)

			updated := readCheckpoint(t, dir, "updated")
			assertBackend(t, updated.Request, 200, "v2")
			require.NotNil(t, updated.Request.Access)
			assert.Equal(t, updated.Request.Upstream, updated.Request.Access.UpstreamHost)
			assert.True(t, strings.HasSuffix(updated.Request.Access.UpstreamHost, ":"+updated.EnvoyConfigVersions["EDS/inventory port"]),
				"the upstream Envoy used is the endpoint in its config dump")
			assert.NotEqual(t, initial.Request.Access.UpstreamHost, updated.Request.Access.UpstreamHost)

			rej := readCheckpoint(t, dir, "rejected-keeps-v2")
			assertBackend(t, rej.Request, 200, "v2")
			assert.GreaterOrEqual(t, rej.NacksInStep, 1)
			assert.Contains(t, rej.NackError, "path_specifier")
			rejBefore, _ := strconv.Atoi(updated.EnvoyStats["http.quote.rds.quote-route."+"update_rejected"])
			rejAfter, _ := strconv.Atoi(rej.EnvoyStats["http.quote.rds.quote-route."+"update_rejected"])
			assert.Greater(t, rejAfter, rejBefore, "Envoy's RDS update_rejected rose")
			assert.Equal(t, updated.EnvoyStats["http.quote.rds.quote-route."+"version_text"], rej.EnvoyStats["http.quote.rds.quote-route."+"version_text"], "RDS version_text did not move")
			nacks := eventsOf(ev, "invalid-route", xdslog.EventNack, "RDS")
			require.NotEmpty(t, nacks)
			assert.Equal(t, "3", nacks[0].SentVersion)
			if mode == protocol.SotW {
				assert.Equal(t, "2", nacks[0].Accepted(), "SotW NACK reports the last good version")
			} else {
				assert.Len(t, nacks, 1, "delta does not re-send rejected content")
			}

			rec := readCheckpoint(t, dir, "recovered")
			assertBackend(t, rec.Request, 200, "v1")

			recon := readCheckpoint(t, dir, "reconnected")
			assertBackend(t, recon.Request, 200, "v1")
			assert.Contains(t, strings.Join(checkNames(recon), ";"), "the new stream subscribed to every type")

			cpr := readCheckpoint(t, dir, "cp-restarted")
			assertBackend(t, cpr.OutageRequest, 200, "v1")
			assertBackend(t, cpr.Request, 200, "v1")
			assert.Contains(t, cpr.VersionNote, `"4"`)
			var reqs, sent, redundant int
			for _, e := range cpr.Exchange {
				if e.Server != 2 {
					continue
				}
				switch e.Event {
				case xdslog.EventRequest:
					reqs++
					assert.Equal(t, xdslog.RequestResume, e.Kind, "%s: a resume after reconnect", e.Type)
					if mode == protocol.Delta {
						assert.NotEmpty(t, e.InitialVersions, "%s: Envoy reconnects with initial_resource_versions", e.Type)
					} else {
						assert.Equal(t, "4", e.Version, "%s: Envoy resumes SotW with its version_info", e.Type)
					}
				case xdslog.EventSend:
					sent += len(e.Resources)
					redundant += e.Redundant
				}
			}
			assert.Equal(t, 4, reqs, "one resubscription per type on the new server")
			if mode == protocol.Delta {
				assert.Zero(t, sent, "hashes match: the new server re-sends nothing")
			} else {
				// The SnapshotCache answers a new stream (pkg/cache/v3/simple.go CreateWatch);
				// the labels are durable in a run, so the resumed version_info says the client
				// holds exactly that content.
				assert.Equal(t, 4, sent, "the new SotW server re-sends everything under the same label")
				assert.Equal(t, 4, redundant, "and every one of them is what the client already runs")
			}

			rm := readCheckpoint(t, dir, "removed")
			require.NotNil(t, rm.Request)
			assert.Equal(t, 503, rm.Request.Status)
			assert.Equal(t, "NC", rm.Request.Flags)
			require.NotNil(t, rm.Request.Access)
			assert.Equal(t, "NC", rm.Request.Access.Flags)
			cds := eventsOf(ev, "remove-cluster", xdslog.EventSend, "CDS")
			require.NotEmpty(t, cds)
			if mode == protocol.Delta {
				assert.Equal(t, []string{"inventory"}, cds[0].Removed)
			} else {
				assert.Empty(t, cds[0].Resources, "SotW removes by absence")
				assert.Empty(t, cds[0].Removed)
			}

			restored := readCheckpoint(t, dir, "restored")
			assertBackend(t, restored.Request, 200, "v1")
			assertRemovalExchange(t, mode, ev)

			sum := readSummary(t, dir)
			assert.Equal(t, "PASS", sum.Result)
			assert.Len(t, sum.Steps, 8)
			require.NotNil(t, sum.Figures)
			pc := sum.Figures.Step("port-change")
			require.NotNil(t, pc)
			if mode == protocol.Delta {
				assert.Equal(t, 1, pc.Total.Resources)
			} else {
				assert.Equal(t, 4, pc.Total.Resources)
				assert.Equal(t, 3, pc.Total.Redundant)
			}
			require.NotNil(t, pc.PublishToCorrectMS)
		})
	}
}

// assertClientViewsAgree: at every step's checkpoint Envoy's own view (its config dump)
// was compared with xds.log's model of its stream, and they agreed; xds.log has the
// step's client_view event.
func assertClientViewsAgree(t *testing.T, dir string, steps []scenario.Step, ev []xdslog.Event) {
	t.Helper()
	for _, st := range steps {
		cp := readCheckpoint(t, dir, st.Checkpoint)
		require.NotNil(t, cp.ClientView, st.Name)
		assert.Equal(t, clientview.ClientEnvoy, cp.ClientView.Client)
		assert.Empty(t, cp.ClientView.Error, st.Name)
		assert.Zero(t, cp.ClientView.Total, "%s: %v", st.Name, cp.ClientView.Findings)
		assert.Positive(t, cp.ClientView.Resources, st.Name)
		i := slices.IndexFunc(cp.Checks, func(c Check) bool { return strings.Contains(c.What, "own view") })
		require.GreaterOrEqual(t, i, 0, st.Name)
		assert.True(t, cp.Checks[i].OK && !cp.Checks[i].Warning, "%s: %+v", st.Name, cp.Checks[i])
		views := eventsOf(ev, st.Name, xdslog.EventClientView, "")
		require.Len(t, views, 1, st.Name)
		assert.Empty(t, views[0].Findings)
	}
}

func checkNames(c Checkpoint) []string {
	var out []string
	for _, ch := range c.Checks {
		out = append(out, ch.What)
	}
	return out
}

// TestRunSimulated runs the scenario with the simulated client: it passes, and every
// data-plane result is labelled simulated; envoy.result is NOT_RUN.
func TestRunSimulated(t *testing.T) {
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := Execute(ctx, Options{Mode: mode, Client: ClientSim, Out: dir})
			require.NoError(t, err)
			assert.Equal(t, "NOT_RUN", res.EnvoyResult)
			assert.Equal(t, "NOT_RUN", readLine(t, filepath.Join(dir, "envoy.result")))
			for _, st := range teachingSteps(t) {
				c := readCheckpoint(t, dir, st.Checkpoint)
				require.NotNil(t, c.Request)
				assert.True(t, c.Request.Simulated, st.Name)
				assert.Equal(t, "simulated", c.Client)
				assert.Empty(t, c.EnvoyStats)
				assert.NoFileExists(t, filepath.Join(dir, st.Name+"-config.json"))
			}
			for _, e := range logEvents(t, dir) {
				if e.Event == xdslog.EventDataPlane {
					assert.Equal(t, "simulated", e.Client)
				}
			}
		})
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	for name, o := range map[string]Options{
		"mode":        {Mode: "grpc", Client: ClientSim, Out: dir},
		"client":      {Mode: "sotw", Client: "curl", Out: dir},
		"step":        {Mode: "sotw", Client: ClientSim, Out: dir, Steps: []string{"initial", "explode"}},
		"delta+nack":  {Mode: "delta", Client: ClientSim, Out: dir, NackPolicy: "hold"},
		"port":        {Mode: "sotw", Client: ClientSim, Out: dir, ListenerPort: 70000},
		"first-step":  {Mode: "sotw", Client: ClientSim, Out: dir, Steps: []string{"envoy-restart"}},
		"envoy-bin":   {Mode: "sotw", Client: ClientEnvoy, Out: dir, EnvoyBin: "/nonexistent/envoy"},
		"versions":    {Mode: "sotw", Client: ClientSim, Out: dir, Versions: "sometimes"},
		"nack-policy": {Mode: "sotw", Client: ClientSim, Out: dir, NackPolicy: "ignore"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Execute(context.Background(), o)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "\n")
			assert.NoDirExists(t, dir, "nothing is created for bad input")
		})
	}
}

// assertRemovalExchange: in remove-cluster and restore, every send gets at most one
// answer (one in all, once the run is over), Envoy's EDS unsubscribe after the cluster
// removal is recorded as an unsubscribe (in SotW it carries an old nonce, so it is stale
// and the library drops it), and the restored cluster's endpoints are needed, not
// redundant: Envoy dropped them with the cluster.
func assertRemovalExchange(t *testing.T, mode protocol.Mode, ev []xdslog.Event) {
	t.Helper()
	type key struct {
		server     int
		stream     int64
		typ, nonce string
	}
	answers := map[key]int{}
	sends := map[key]bool{}
	for _, e := range ev {
		k := key{e.Server, e.Stream, e.Type, e.Nonce}
		switch e.Event {
		case xdslog.EventSend:
			if e.Step == "remove-cluster" || e.Step == "restore" {
				sends[k] = true
			}
		case xdslog.EventAck, xdslog.EventNack:
			answers[k]++
		}
	}
	for k := range sends {
		assert.Equal(t, 1, answers[k], "send %+v answered exactly once", k)
	}
	for k, n := range answers {
		assert.Equal(t, 1, n, "%+v answered %d times", k, n)
	}
	var unsub []xdslog.Event
	for _, e := range ev {
		if e.Step == "remove-cluster" && e.Type == "EDS" && e.Kind == xdslog.RequestUnsubscribe {
			unsub = append(unsub, e)
		}
	}
	require.Len(t, unsub, 1, "Envoy's EDS unsubscribe after the cluster removal")
	assert.Equal(t, []string{"inventory"}, unsub[0].Removed)
	if mode == protocol.SotW && unsub[0].Event == xdslog.EventStale {
		// Usually: it carries the nonce of an older EDS response, so the library drops it.
		assert.NotEqual(t, unsub[0].LatestNonce, unsub[0].Nonce)
	} else {
		// Delta; or SotW when Envoy had already taken the newest EDS response: then the
		// unsubscribe carries the latest nonce and is an ordinary request.
		assert.Equal(t, xdslog.EventRequest, unsub[0].Event)
	}
	eds := eventsOf(ev, "restore", xdslog.EventSend, "EDS")
	var restoredEDS []xdslog.Resource
	for _, s := range eds {
		restoredEDS = append(restoredEDS, s.Resources...)
	}
	require.NotEmpty(t, restoredEDS, "the restored cluster's endpoints were sent")
	for _, r := range restoredEDS {
		assert.False(t, r.IsRedundant(), "the restored cluster needs its endpoints to warm: not redundant")
	}
}
