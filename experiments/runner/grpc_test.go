package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/grpcclient/grpcclienttest"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// --client grpc with delta is refused before anything starts, in one line that names
// grpc-go's source.
func TestGRPCClientRefusesDelta(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, err := Execute(context.Background(), Options{Mode: protocol.Delta, Client: ClientGRPC, Out: dir})
	require.ErrorIs(t, err, grpcclient.ErrNoDelta)
	assert.NotContains(t, err.Error(), "\n")
	assert.Contains(t, err.Error(), "internal/xds/clients/xdsclient/ads_stream.go")
	assert.NoDirExists(t, dir, "nothing is created")
}

// On-demand scenarios and Envoy bootstrap overrides do not apply to the grpc client.
func TestGRPCClientRefusesWhatItCannotRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	od, err := scenario.Builtin("on-demand-cluster")
	require.NoError(t, err)
	_, err = Execute(context.Background(), Options{Mode: protocol.Delta, Client: ClientGRPC, Out: dir, Scenario: od})
	require.ErrorIs(t, err, grpcclient.ErrNoDelta, "delta is the first refusal")
	_, err = Execute(context.Background(), Options{Mode: protocol.SotW, Client: ClientGRPC, Out: dir, Scenario: od})
	require.Error(t, err)
	_, err = Execute(context.Background(), Options{Mode: protocol.SotW, Client: ClientGRPC, Out: dir, ConfigYAML: "{}"})
	var oe *option.Error
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, OptionConfigYAML, oe.Option)
	assert.ErrorContains(t, err, "the grpc client has none")
	assert.NoDirExists(t, dir, "nothing is created")
}

// A listener written in Envoy's v3 form as a socket listener is refused for the grpc
// client before anything starts, in one line naming grpc-go's source; grpc-go would ACK
// it as a server's listener and never ask for its route. The same file runs with the
// simulated client, for which a socket listener is what Envoy takes.
func TestGRPCClientRefusesASocketListener(t *testing.T) {
	sc, err := scenario.ParseFile(filepath.Join("testdata", "socket-listener.yaml"))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "run")
	_, err = Execute(context.Background(), Options{Mode: protocol.SotW, Client: ClientGRPC, Out: dir, Scenario: sc})
	require.ErrorIs(t, err, resources.ErrNotAPIListener)
	assert.True(t, scenario.IsNotApplicable(err))
	assert.EqualError(t, err, `scenario socket-listener does not apply to the grpc client: resource "l": listener "quote-listener" is a socket listener (an address, no api_listener): `+
		resources.ErrNotAPIListener.Error())
	assert.Contains(t, err.Error(), "internal/xds/xdsclient/xdsresource/unmarshal_lds.go, processListener")
	assert.NotContains(t, err.Error(), "\n")
	assert.NoDirExists(t, dir, "nothing is created")

	_, err = scenarioRun(t, sc, Options{Mode: protocol.SotW, Client: ClientSim, StepTimeout: 20 * time.Second})
	require.NoError(t, err, "the file itself is a good scenario")
	teaching, err := scenario.Builtin("teaching")
	require.NoError(t, err)
	assert.NoError(t, teaching.CheckProxyless(), "a short-form listener is built as an api_listener for grpc")
}

// The teaching scenario's steps up to the control-plane restart (port change, invalid
// route, recovery, client restart, server restart) with grpc-go's own xDS client as the
// data plane: every step passes on its evidence (the backend named by the answer and by
// its own log, the NACK in xds.log with grpc-go's reason, the last good route serving
// meanwhile and during the outage), the result is a real one (PASS, not NOT_RUN), and
// each step keeps the client's CSDS view. (The whole scenario, remove-cluster's 503 NC
// read as grpc-go's config failure included, runs in TestPackGRPC.)
func TestGRPCClientRunsTheTeachingSteps(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	steps := []string{"initial", "port-change", "invalid-route", "recover", "envoy-restart", "control-plane-restart"}
	res, err := Execute(ctx, Options{Mode: protocol.SotW, Client: ClientGRPC, GRPCCommand: grpcclienttest.Command(t),
		Out: dir, Steps: steps, StepTimeout: 40 * time.Second})
	require.NoError(t, err, "%+v", res)
	assert.Equal(t, "PASS", res.EnvoyResult)
	want := map[string]string{"initial": "v1", "port-change": "v2", "invalid-route": "v2", "recover": "v1",
		"envoy-restart": "v1", "control-plane-restart": "v1"}
	for _, st := range teachingSteps(t) {
		backend, ok := want[st.Name]
		if !ok {
			continue
		}
		c := readCheckpoint(t, dir, st.Checkpoint)
		assert.Equal(t, ClientGRPC, c.Client)
		require.NotNil(t, c.Request, st.Name)
		assert.Equal(t, backend, c.Request.LogBackend, "%s: the backend's own log", st.Name)
		assert.Equal(t, backend, c.Request.BodyBackend, "%s: the answer", st.Name)
		assert.Equal(t, "OK", c.Request.GRPCStatus, st.Name)
		assert.Equal(t, ClientGRPC, c.Request.Client, st.Name)
		assert.Empty(t, c.EnvoyStats, "no Envoy admin")
		assertCSDS(t, dir, c, st.Name)
		// grpc-go's own view (CSDS) checked against xds.log's model of its stream.
		require.NotNil(t, c.ClientView, st.Name)
		assert.Equal(t, ClientGRPC, c.ClientView.Client, st.Name)
		assert.Empty(t, c.ClientView.Error, st.Name)
		assert.Positive(t, c.ClientView.Comparisons, st.Name)
		assert.Equal(t, 4, c.ClientView.Resources, "%s: listener, route, cluster, assignment", st.Name)
		assert.Zero(t, c.ClientView.Total, "%s: findings %v", st.Name, c.ClientView.Findings)
		switch st.Name {
		case "invalid-route":
			assert.Contains(t, c.NackError, "doesn't have a path specifier", "grpc-go's own reason")
		case "control-plane-restart":
			require.NotNil(t, c.OutageRequest, "a request during the outage")
			assert.Equal(t, "v1", c.OutageRequest.LogBackend, "the last good configuration serves while the server is down")
		}
	}
	for _, e := range logEvents(t, dir) {
		if e.Event == xdslog.EventDataPlane {
			assert.Equal(t, ClientGRPC, e.Client)
		}
	}
}

// assertCSDS: the step's CSDS view is kept, names the run's node and holds the listener,
// route configuration, cluster and assignment.
func assertCSDS(t *testing.T, dir string, c Checkpoint, step string) {
	t.Helper()
	require.NotEmpty(t, c.ClientStatus, "%s: %s", step, c.ClientStatusError)
	b, err := os.ReadFile(filepath.Join(dir, c.ClientStatus))
	require.NoError(t, err)
	var resp statuspb.ClientStatusResponse
	require.NoError(t, protojson.Unmarshal(b, &resp))
	types := map[resources.Type]int{}
	for _, cfg := range resp.GetConfig() {
		assert.Equal(t, resources.NodeID, cfg.GetNode().GetId())
		for _, g := range cfg.GetGenericXdsConfigs() {
			typ, ok := resources.TypeOf(g.GetTypeUrl())
			require.True(t, ok, g.GetTypeUrl())
			types[typ]++
		}
	}
	assert.Equal(t, map[resources.Type]int{resources.LDS: 1, resources.RDS: 1, resources.CDS: 1, resources.EDS: 1}, types, step)
}

// grpc-go applies the valid part of a CDS response it NACKs (many-per-type's
// one-invalid-among-three: an invalid c beside a new valid d): the NACK is recorded with
// grpc-go's reason, d serves, and its CSDS view (d ACKED under the NACKed version, c
// NACKED keeping the last good one) agrees with xds.log's model by clientview's
// partial-accept rule: no finding.
func TestGRPCClientPartialAcceptAgrees(t *testing.T) {
	sc, err := scenario.Builtin("many-per-type")
	require.NoError(t, err)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Execute(ctx, Options{Mode: protocol.SotW, Client: ClientGRPC, GRPCCommand: grpcclienttest.Command(t),
		Scenario: sc, Out: dir, Steps: []string{"initial", "remove-one", "one-invalid-among-three"}, StepTimeout: 40 * time.Second})
	require.NoError(t, err, "%+v", res)
	assert.Equal(t, "PASS", res.EnvoyResult)

	c := readCheckpoint(t, dir, "one-invalid-among-three")
	assert.Contains(t, c.NackError, "unexpected lbPolicy MAGLEV", "grpc-go's own reason")
	var servedD bool
	for _, q := range c.Requests {
		if q.Request.Path == "/quote/d" {
			servedD = q.Passed && q.Request.LogBackend == "v2"
		}
	}
	assert.True(t, servedD, "d, the valid part of the NACKed response, serves: %+v", c.Requests)
	require.NotNil(t, c.ClientView)
	assert.Zero(t, c.ClientView.Total, "findings %v", c.ClientView.Findings)

	b, err := os.ReadFile(filepath.Join(dir, c.ClientStatus))
	require.NoError(t, err)
	var resp statuspb.ClientStatusResponse
	require.NoError(t, protojson.Unmarshal(b, &resp))
	view, err := clientview.FromCSDS(&resp, resources.NodeID)
	require.NoError(t, err)
	rows := map[string]clientview.Resource{}
	for _, r := range view {
		if r.Type == string(resources.CDS) {
			rows[r.Name] = r
		}
	}
	require.Equal(t, clientview.StatusNACKED, rows["c"].Status)
	nacked := rows["c"].RejectedVersion
	assert.NotEqual(t, nacked, rows["c"].Version, "c keeps the last good version")
	assert.Equal(t, clientview.StatusACKED, rows["d"].Status)
	assert.Equal(t, nacked, rows["d"].Version, "d ACKED under the NACKed version")
}

// A named CDS subscription that narrows (grpc-go drops the cluster its route no longer
// names once the missing one's 15 s does-not-exist timer fires: CDS [blue], with
// inventory still published) must still be sent the cluster when it appears (xDS
// protocol, "Knowing When a Requested Resource Does Not Exist"). The LinearCache does;
// go-control-plane's SnapshotCache in ADS mode does not: it answers a SotW request only
// when its names cover every resource of the type in the snapshot
// (pkg/cache/v3/simple.go, snapshotCache.respond -> superset; go-control-plane issue
// #426), so the client's CSDS keeps saying DOES_NOT_EXIST and the step fails. Both
// outcomes are asserted: the second is the library's rule, shown, not hidden.
func TestGRPCNarrowedSubscriptionGetsTheLateCluster(t *testing.T) {
	t.Parallel()
	sc, err := scenario.ParseFile(filepath.Join("testdata", "late-cluster.yaml"))
	require.NoError(t, err)
	for _, cache := range []publish.Cache{publish.LinearCache, publish.SnapshotCache} {
		t.Run(string(cache), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := Execute(ctx, Options{Mode: protocol.SotW, Cache: cache, Client: ClientGRPC, GRPCCommand: grpcclienttest.Command(t),
				Scenario: sc, Out: dir, StepTimeout: 40 * time.Second}) // grpc-go's 15 s timer, on a busy machine
			narrowed := cdsRequestsOf(t, dir, "route-before-cluster")
			require.NotEmpty(t, narrowed, "grpc-go asks for blue by name")
			assert.Equal(t, []string{"blue"}, narrowed[len(narrowed)-1], "after the timer: CDS narrowed to the missing cluster (all requests: %v)", narrowed)
			if cache == publish.LinearCache {
				require.NoError(t, err, "%+v", res)
				assert.Equal(t, "PASS", res.EnvoyResult)
				c := readCheckpoint(t, dir, "cluster-after-route")
				require.NotNil(t, c.ClientView)
				assert.Zero(t, c.ClientView.Total, "findings %v", c.ClientView.Findings)
				return
			}
			require.Error(t, err, "the SnapshotCache never answers CDS [blue] while inventory is in the snapshot")
			assert.Contains(t, err.Error(), "step cluster-after-route")
			// The rule itself: a CDS send of the step answered only a subscription that
			// names every cluster of the snapshot, never the narrowed [blue]. (On a busy
			// machine grpc-go can ask for both again, late in the step; the cache then
			// answers that request, which the rule allows.)
			events := xdsEvents(t, dir)
			for _, send := range cdsSendsOf(t, dir, "cluster-after-route") {
				assert.Subset(t, subscriptionAt(events, send), []string{"blue", "inventory"},
					"the SnapshotCache answered a CDS subscription that does not cover its snapshot: %+v", send)
			}
		})
	}
}

// cdsRequestsOf is the names of every CDS request xds.log recorded in a step.
func cdsRequestsOf(t *testing.T, dir, step string) [][]string {
	var out [][]string
	for _, e := range xdsEvents(t, dir) {
		if e.Step == step && e.Event == xdslog.EventRequest && e.Type == string(resources.CDS) {
			out = append(out, e.Names)
		}
	}
	return out
}

// subscriptionAt is the names of the SotW subscription a send answered: those of the
// last request of its stream and type before it that the server read (a stale request
// changed nothing; an ACK repeats the names and is logged without them).
func subscriptionAt(events []xdslog.Event, send xdslog.Event) []string {
	var names []string
	for _, e := range events {
		if e.TS.After(send.TS) {
			break
		}
		if e.Event == xdslog.EventRequest && e.Server == send.Server && e.Stream == send.Stream && e.Type == send.Type {
			names = e.Names
		}
	}
	return names
}

// cdsSendsOf is every CDS send xds.log recorded in a step.
func cdsSendsOf(t *testing.T, dir, step string) []xdslog.Event {
	var out []xdslog.Event
	for _, e := range xdsEvents(t, dir) {
		if e.Step == step && e.Event == xdslog.EventSend && e.Type == string(resources.CDS) {
			out = append(out, e)
		}
	}
	return out
}

func xdsEvents(t *testing.T, dir string) []xdslog.Event {
	t.Helper()
	events, _, err := xdslog.ReadFile(filepath.Join(dir, "xds.log"))
	require.NoError(t, err)
	return events
}
