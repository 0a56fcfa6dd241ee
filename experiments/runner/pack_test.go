package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/grpcclient/grpcclienttest"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

var (
	modes  = []protocol.Mode{protocol.SotW, protocol.Delta}
	caches = []publish.Cache{publish.SnapshotCache, publish.LinearCache, publish.IndexedCache}
)

// scenarioRun runs sc on free ports in a temporary directory and returns it with the
// run's error; the progress lines are logged.
func scenarioRun(t *testing.T, sc *scenario.Scenario, o Options) (string, error) {
	t.Helper()
	o.Scenario = sc
	if o.StepTimeout == 0 {
		o.StepTimeout = 30 * time.Second
	}
	dir, _, err := runLogged(t, o, 3*time.Minute, false)
	return dir, err
}

// passedSteps reads every step's checkpoint: each must have passed.
func passedSteps(t *testing.T, dir string, sc *scenario.Scenario) map[string]Checkpoint {
	t.Helper()
	out := map[string]Checkpoint{}
	for _, st := range sc.Steps {
		out[st.Name] = readCheckpoint(t, dir, st.Checkpoint)
	}
	return out
}

func loadPack(t *testing.T) []*scenario.Scenario {
	t.Helper()
	pack, err := scenario.Pack()
	require.NoError(t, err)
	return pack
}

// TestPackSimulated runs every built-in scenario against the simulated client, in both
// protocols and with both caches: every step passes (envoy.result NOT_RUN: no data-plane
// result is Envoy's), and what each scenario is about shows in xds.log.
func TestPackSimulated(t *testing.T) {
	testenv.SkipIfShort(t, testenv.NeedsLongRun)
	for _, sc := range loadPack(t) {
		for _, mode := range modes {
			for _, cache := range caches {
				t.Run(sc.Name+"/"+mode.String()+"/"+string(cache), func(t *testing.T) {
					if sc.OnDemand.Any() {
						// The simulated client has no on_demand filter; SotW is refused first.
						want := errSimOnDemand
						if mode == protocol.SotW {
							want = resources.ErrOnDemandNeedsDelta
						}
						assertNotApplicable(t, sc, Options{Mode: mode, Cache: cache, Client: ClientSim}, want)
						return
					}
					if sc.UsesTLS() {
						assertNotApplicable(t, sc, Options{Mode: mode, Cache: cache, Client: ClientSim}, errSimTLS)
						return
					}
					if sc.UsesHeldConn() {
						assertNotApplicable(t, sc, Options{Mode: mode, Cache: cache, Client: ClientSim}, errSimHeld)
						return
					}
					assertPackRun(t, sc, Options{Mode: mode, Cache: cache, Client: ClientSim}, "NOT_RUN")
				})
			}
		}
	}
}

// TestPackEnvoy runs every built-in scenario against real Envoy, in both protocols and
// with both caches (the two protocols side by side): every step passes, and the
// scenario's point shows in the evidence.
func TestPackEnvoy(t *testing.T) {
	envoytest.Require(t)
	pack := loadPack(t)
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			for _, sc := range pack {
				for _, cache := range caches {
					t.Run(sc.Name+"/"+string(cache), func(t *testing.T) {
						if mode == protocol.SotW && sc.OnDemand.Any() {
							assertNotApplicable(t, sc, Options{Mode: mode, Cache: cache, Client: ClientEnvoy}, resources.ErrOnDemandNeedsDelta)
							return
						}
						assertPackRun(t, sc, Options{Mode: mode, Cache: cache, Client: ClientEnvoy}, "PASS")
					})
				}
			}
		})
	}
}

// TestPackGRPC runs the pack against grpc-go's own xDS client (SotW, the snapshot
// cache): every scenario that applies passes, and at every step grpc-go's CSDS view
// agrees with xds.log's model of its stream; the others are refused as not applicable
// with their reason (on-demand: delta only; not_for: grpc in the scenario).
func TestPackGRPC(t *testing.T) {
	for _, sc := range loadPack(t) {
		t.Run(sc.Name, func(t *testing.T) {
			o := Options{Mode: protocol.SotW, Cache: publish.SnapshotCache, Client: ClientGRPC, GRPCCommand: grpcclienttest.Command(t)}
			switch {
			case sc.OnDemand.Any():
				assertNotApplicable(t, sc, o, resources.ErrOnDemandNeedsDelta)
				return
			case sc.NotFor[ClientGRPC] != "":
				o.Scenario, o.Out = sc, filepath.Join(t.TempDir(), "run")
				_, err := Execute(context.Background(), o)
				assert.True(t, scenario.IsNotApplicable(err), "%v", err)
				assert.EqualError(t, err, "scenario "+sc.Name+" does not apply to the grpc client: "+sc.NotFor[ClientGRPC])
				assert.NoDirExists(t, o.Out, "refused before anything started")
				return
			}
			o.StepTimeout = 40 * time.Second // grpc-go's 15 s watch expiry can be on the way
			dir, err := scenarioRun(t, sc, o)
			require.NoError(t, err)
			assert.Equal(t, "PASS", readLine(t, dir+"/envoy.result"))
			for step, c := range passedSteps(t, dir, sc) {
				assert.Equal(t, ClientGRPC, c.Client, step)
				require.NotNil(t, c.ClientView, step)
				assert.Empty(t, c.ClientView.Error, step)
				assert.Zero(t, c.ClientView.Total, "%s: findings %v", step, c.ClientView.Findings)
			}
		})
	}
}

// assertNotApplicable: the scenario is refused for this run with one line that names
// it and gives the reason (want), before anything is created.
func assertNotApplicable(t *testing.T, sc *scenario.Scenario, o Options, want error) {
	t.Helper()
	o.Scenario, o.Out = sc, filepath.Join(t.TempDir(), "run")
	_, err := Execute(context.Background(), o)
	require.Error(t, err)
	assert.True(t, scenario.IsNotApplicable(err), "%v", err)
	assert.ErrorIs(t, err, want)
	assert.Contains(t, err.Error(), "scenario "+sc.Name+" does not apply to ")
	assert.NotContains(t, err.Error(), "\n")
	assert.NoDirExists(t, o.Out, "refused before anything started")
}

// assertPackRun runs sc with o, and requires every step passed, envoy.result to say
// result, and the scenario's point in the evidence (real Envoy's, for ClientEnvoy).
func assertPackRun(t *testing.T, sc *scenario.Scenario, o Options, result string) {
	t.Helper()
	dir, err := scenarioRun(t, sc, o)
	require.NoError(t, err)
	assert.Equal(t, result, readLine(t, dir+"/envoy.result"))
	cps := passedSteps(t, dir, sc)
	assertPackEvidence(t, sc.Name, o.Mode, o.Cache, dir, cps, o.Client == ClientEnvoy)
}

// assertPackEvidence checks, beyond the scenario's own expectations, the evidence that
// makes each scenario's point, from the checkpoints and xds.log.
func assertPackEvidence(t *testing.T, name string, mode protocol.Mode, cache publish.Cache, dir string, cps map[string]Checkpoint, real bool) {
	t.Helper()
	ev := logEvents(t, dir)
	switch name {
	case "under-load":
		assertUnderLoad(t, cps, ev, real)
	case "slow-endpoint":
		if real {
			mv := cps["port-change"].Traffic.Move
			require.NotNil(t, mv)
			require.NotNil(t, mv.LastOldAnsweredMS, "requests routed to v1 before the change were answered by v1 after it")
			assert.Positive(t, *mv.LastOldAnsweredMS)
			assert.Zero(t, cps["port-change"].Traffic.Requests-cps["port-change"].Traffic.OK, "and none failed")
		}
	case "warming-order":
		w := cps["route-before-cluster"].Window
		require.NotNil(t, w)
		assert.GreaterOrEqual(t, w.Failures, 1, "a 503 NC window")
		assert.Equal(t, w.Failures, w.Answers["503 NC"], "every failure is 503 NC: %v", w.Answers)
		assert.Zero(t, cps["then-the-route"].Window.Failures, "make-before-break: no failure")
		if real {
			// The CDS ACK of the warming cluster came only after its endpoints were
			// published: Envoy answers CDS once its clusters have warmed.
			pub := eventsOf(ev, "endpoints-arrive", xdslog.EventPublish, "")
			acks := eventsOf(ev, "endpoints-arrive", xdslog.EventAck, "CDS")
			require.NotEmpty(t, pub)
			require.NotEmpty(t, acks, "the CDS ACK of cluster-warming's send arrives in endpoints-arrive")
			assert.True(t, acks[0].TS.After(pub[0].TS))
		}
	case "sds-rotation", "sds-not-ready", "sds-invalid", "secret-removed":
		if real {
			assertSDS(t, name, mode, cache, ev, cps)
		}
	case "sds-superset":
		if real {
			assertSDSSuperset(t, mode, cache, ev, cps)
		}
	case "removal-while-disconnected":
		sends := eventsOf(ev, "remove-while-down", xdslog.EventSend, "CDS")
		var second []xdslog.Event
		for _, s := range sends {
			if s.Server == 2 {
				second = append(second, s)
			}
		}
		require.NotEmpty(t, second)
		if mode == protocol.Delta {
			assert.Contains(t, second[0].Removed, "b", "delta removes b explicitly, from initial_resource_versions")
		} else {
			for _, r := range second[0].Resources {
				assert.NotEqual(t, "b", r.Name, "SotW removes b by absence")
			}
		}
	case "cds-without-eds":
		if real {
			want := int64(1)
			if mode == protocol.SotW && cache == publish.SnapshotCache {
				want = 0
			}
			assert.Equal(t, want, cps["cluster-change"].StatValues["cluster.inventory.init_fetch_timeout"], "warming waited for initial_fetch_timeout")
		}
	case "resource-does-not-exist":
		for _, s := range eventsOf(ev, "", xdslog.EventSend, "EDS") {
			assert.NotContains(t, s.Removed, "ghost", "go-control-plane never says ghost does not exist")
		}
		for _, st := range []string{"subscribe-missing", "initial-fetch-timeout"} {
			for _, s := range eventsOf(ev, st, xdslog.EventSend, "EDS") {
				assert.NotContains(t, s.Removed, "ghost")
				for _, r := range s.Resources {
					assert.NotEqual(t, "ghost", r.Name)
				}
			}
		}
		if real {
			assert.GreaterOrEqual(t, cps["initial-fetch-timeout"].StatValues["cluster.ghost.init_fetch_timeout"], int64(1))
		}
	case "many-per-type":
		for _, s := range eventsOf(ev, "recover", xdslog.EventSend, "CDS") {
			var names []string
			for _, r := range s.Resources {
				names = append(names, r.Name)
			}
			if mode == protocol.Delta {
				assert.Equal(t, []string{"c"}, names, "the delta server re-sends only c: it believes the client has d")
			} else {
				assert.Subset(t, names, []string{"a", "c", "d"}, "SotW re-sends the whole type")
			}
		}
	case "rapid-publishes":
		b := cps["burst"].Burst
		require.NotNil(t, b)
		assert.Equal(t, 20, b.Publishes)
		assert.Len(t, eventsOf(ev, "burst", xdslog.EventPublish, ""), 20)
		// How many of the superseded states were sent depends on how fast the client
		// ACKs (docs/scenarios.md has the figures); the last send is the last state.
		sends := eventsOf(ev, "burst", xdslog.EventSend, "EDS")
		require.NotEmpty(t, sends)
		assert.LessOrEqual(t, len(sends), 20)
		last := sends[len(sends)-1]
		require.Len(t, last.Resources, 1)
		var lastEDS string
		for _, p := range eventsOf(ev, "burst", xdslog.EventPublish, "") {
			for _, r := range p.Resources {
				if r.Type == "EDS" {
					lastEDS = r.Hash
				}
			}
		}
		assert.Equal(t, lastEDS, last.Resources[0].Hash, "the last EDS send is the last published assignment")
	case "delta-non-wildcard-removal":
		if mode == protocol.Delta {
			var removed []string
			for _, s := range append(eventsOf(ev, "remove-assignment", xdslog.EventSend, "EDS"), eventsOf(ev, "remove-route", xdslog.EventSend, "RDS")...) {
				removed = append(removed, s.Removed...)
			}
			slices.Sort(removed)
			assert.Equal(t, []string{"inventory", "quote-route"}, removed, "delta removed both explicitly, and Envoy kept serving")
		}
	case "nack-policies":
		assert.GreaterOrEqual(t, cps["invalid-route"].NacksInStep, 1)
	case "on-demand-vhost":
		assertOnDemandVhost(t, ev)
	case "on-demand-cluster":
		assertOnDemandCluster(t, ev)
	case "on-demand-restart":
		assertOnDemandRestart(t, ev)
	}
}

// TestNackPolicies runs the nack-policies scenario under every SotW policy and with
// Envoy's own rate_limit_settings, against real Envoy, and compares the storms.
func TestNackPolicies(t *testing.T) {
	envoytest.Require(t)
	sc, err := scenario.Builtin("nack-policies")
	require.NoError(t, err)
	type result struct{ storm, invalid int }
	got := map[string]result{}
	for _, c := range []struct {
		name   string
		policy sotw.NackPolicy
		config string
	}{
		{"resend", sotw.Resend, ""},
		{"hold", sotw.Hold, ""},
		{"backoff", sotw.Backoff, ""},
		{"revert", sotw.Revert, ""},
		{"rate-limited", sotw.Resend, "{dynamic_resources: {ads_config: {rate_limit_settings: {max_tokens: 5, fill_rate: 2}}}}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, err := scenarioRun(t, sc, Options{Mode: protocol.SotW, Client: ClientEnvoy, NackPolicy: c.policy, ConfigYAML: c.config})
			require.NoError(t, err)
			cps := passedSteps(t, dir, sc)
			got[c.name] = result{storm: cps["storm"].NacksInStep, invalid: cps["invalid-route"].NacksInStep}
			require.NotNil(t, cps["storm"].CPU)
			assert.NotNil(t, cps["storm"].CPU.EnvoyMS, "Envoy's CPU over the storm")
			ev := logEvents(t, dir)
			switch c.name {
			case "revert":
				var reverted []string
				for _, e := range eventsOf(ev, "invalid-route", xdslog.EventPublish, "") {
					reverted = append(reverted, e.Version)
				}
				assert.Contains(t, reverted, "2-reverted", "the control plane republished the accepted route")
			case "rate-limited":
				assert.Greater(t, atoi(cps["storm"].EnvoyStats["control_plane.rate_limit_enforced"]), 0, "Envoy's token bucket held requests back")
			}
		})
	}
	t.Logf("NACKs in the 2 s storm: %+v", got)
	if len(got) == 5 {
		assert.Greater(t, got["resend"].storm, 100, "resend: a storm")
		assert.Zero(t, got["hold"].storm, "hold: silence until the next publish")
		assert.Zero(t, got["revert"].storm, "revert: the client runs the reverted content")
		assert.Less(t, got["backoff"].storm, 10, "backoff: a few spaced re-sends")
		assert.Greater(t, got["backoff"].storm, 0)
		assert.Less(t, got["rate-limited"].storm, got["resend"].storm/10, "rate_limit_settings throttles the storm")
	}
}

// TestGeneralScenario runs a scenario written only for this test (testdata/general.yaml:
// three backends, a weighted route and a header match in Envoy's v3 form, two endpoints,
// a kill and an outage) with the simulated client; TestGeneralScenarioEnvoy with real
// Envoy.
func TestGeneralScenario(t *testing.T) { runGeneral(t, ClientSim) }

func TestGeneralScenarioEnvoy(t *testing.T) {
	envoytest.Require(t)
	runGeneral(t, ClientEnvoy)
}

func runGeneral(t *testing.T, client string) {
	sc, err := scenario.ParseFile("testdata/general.yaml")
	require.NoError(t, err)
	for _, mode := range modes {
		for _, cache := range caches {
			t.Run(mode.String()+"/"+string(cache), func(t *testing.T) {
				dir, err := scenarioRun(t, sc, Options{Mode: mode, Cache: cache, Client: client})
				require.NoError(t, err)
				cps := passedSteps(t, dir, sc)
				init := cps["initial"]
				require.Len(t, init.Requests, 4)
				assert.Equal(t, "canary", init.Requests[1].Request.Backend(), "the header match")
				assert.Equal(t, "stable", init.Requests[2].Request.Backend())
				assert.Equal(t, "canary", init.Requests[3].Request.Backend(), "the weighted route reaches both")
				two := cps["two-endpoints"]
				assert.ElementsMatch(t, []string{"spare", "stable"}, []string{two.Requests[0].Request.Backend(), two.Requests[1].Request.Backend()})
				if client == ClientEnvoy {
					// The backends' own logs say which protocol Envoy used upstream.
					protos := func(name string) map[string]bool {
						seen := map[string]bool{}
						require.NoError(t, inventory.ScanFile(filepath.Join(dir, "inventory-"+name+".log"), func(l inventory.LogLine) { seen[l.Proto] = true }))
						return seen
					}
					assert.Equal(t, map[string]bool{"HTTP/2.0": true}, protos("canary"), "upstream: http2")
					assert.Equal(t, map[string]bool{"HTTP/1.1": true}, protos("stable"), "the default upstream")
				}
				info := rawRunInfo(t, dir)
				assert.Equal(t, "general", info.Scenario)
				assert.Len(t, info.Inventory, 3)
			})
		}
	}
}

// TestFailedExpectationNamesItsLine: the run's error and the checkpoint name the file
// and line of the expectation that did not hold.
func TestFailedExpectationNamesItsLine(t *testing.T) {
	file := t.TempDir() + "/wrong.yaml"
	require.NoError(t, os.WriteFile(file, []byte(`name: wrong
description: expects the wrong backend
backends: [v1, v2]
resources:
  l:
    listener: {route: r}
  r:
    route:
      routes: [{path: /quote, cluster: c}]
  c:
    cluster: {backends: [v1]}
steps:
  - name: initial
    publish: {upsert: [l, r, c]}
    expect:
      requests:
        - {path: /quote, status: 200, backend: v2}
`), 0o644))
	sc, err := scenario.ParseFile(file)
	require.NoError(t, err)
	dir, err := scenarioRun(t, sc, Options{Mode: protocol.Delta, Client: ClientSim, StepTimeout: 2 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "expected /quote: 200 from v2 ("+file+":17)")
	cp := rawCheckpoint(t, dir, "initial")
	c := findCheck(cp, "/quote: 200 from v2")
	require.NotNil(t, c)
	assert.False(t, c.OK)
	assert.Equal(t, file+":17", c.Source)
}

// assertSDS checks the TLS evidence of the SDS scenarios beyond their expectations: the
// certificates the handshakes presented, the held connection's reuse, and in delta only
// the Secret sent for a rotation.
func assertSDS(t *testing.T, name string, mode protocol.Mode, cache publish.Cache, ev []xdslog.Event, cps map[string]Checkpoint) {
	t.Helper()
	switch name {
	case "sds-invalid":
		assertSDSInvalid(t, mode, cache, ev)
		return
	case "secret-removed":
		assertSecretRemoved(t, mode, cache, ev)
		return
	}
	if name == "sds-not-ready" {
		require.NotNil(t, cps["no-secret"].Request)
		assert.Equal(t, scenario.HandshakeRefused, cps["no-secret"].Request.Handshake, "port closed while warming")
		require.NotNil(t, cps["fetch-timeout"].Request)
		assert.Equal(t, scenario.HandshakeReset, cps["fetch-timeout"].Request.Handshake, "active without a certificate")
		assert.Equal(t, "101", cps["secret-arrives"].Request.CertSerial)
		return
	}
	rq := cps["rotate"].Requests
	require.Len(t, rq, 2)
	assert.Equal(t, "102", rq[0].Request.CertSerial, "a new handshake gets the new certificate")
	assert.Equal(t, "101", rq[1].Request.CertSerial, "the held connection keeps the old one")
	assert.True(t, rq[1].Request.Reused)
	assert.Equal(t, cps["initial"].Requests[1].Request.Conn, rq[1].Request.Conn, "the same connection")
	assert.NotEmpty(t, eventsOf(ev, "rotate", xdslog.EventSend, "SDS"))
	if mode == protocol.Delta {
		for _, typ := range []string{"LDS", "RDS", "CDS", "EDS"} {
			assert.Empty(t, eventsOf(ev, "rotate", xdslog.EventSend, typ), "delta sends only the Secret, not %s", typ)
		}
	}
}

// assertSDSInvalid: the bad secret is NACKed in every run; only the SotW SnapshotCache
// (uniform labels, resend) sends it again, and Envoy ACKs the identical copy (its SdsApi
// skips a secret whose hash it recorded before the failed update: sds_api.cc,
// SdsApi::onConfigUpdate). Everywhere else nothing follows the NACK.
func assertSDSInvalid(t *testing.T, mode protocol.Mode, cache publish.Cache, ev []xdslog.Event) {
	t.Helper()
	nacks := eventsOf(ev, "invalid-secret", xdslog.EventNack, "SDS")
	require.NotEmpty(t, nacks, "the bad secret is NACKed")
	sends := eventsOf(ev, "invalid-secret", xdslog.EventSend, "SDS")
	acks := eventsOf(ev, "invalid-secret", xdslog.EventAck, "SDS")
	if mode == protocol.SotW && cache == publish.SnapshotCache {
		assert.GreaterOrEqual(t, len(sends), 2, "the same secret sent again after the NACK")
		require.NotEmpty(t, acks, "and the identical copy ACKed")
		assert.True(t, acks[len(acks)-1].TS.After(nacks[0].TS))
		return
	}
	assert.Len(t, sends, 1, "nothing follows the NACK")
	assert.Empty(t, acks)
}

// assertSecretRemoved: what the removal sends depends on the protocol and cache. Delta
// names it in removed_resources; the SotW SnapshotCache sends the type without it; the
// SotW LinearCache (and the indexed cache, its semantics) sends nothing for a named
// subscription whose resource went away. Whatever was sent is ACKed; the data plane is
// the scenario's to check.
func assertSecretRemoved(t *testing.T, mode protocol.Mode, cache publish.Cache, ev []xdslog.Event) {
	t.Helper()
	sends := eventsOf(ev, "remove", xdslog.EventSend, "SDS")
	switch {
	case mode == protocol.SotW && cache != publish.SnapshotCache:
		assert.Empty(t, sends, "the SotW LinearCache sends nothing for the removal")
		return
	case mode == protocol.Delta:
		require.NotEmpty(t, sends)
		assert.Equal(t, []string{"quote-cert"}, sends[0].Removed, "delta names it in removed_resources")
	default:
		require.NotEmpty(t, sends)
		assert.Empty(t, sends[0].Resources, "the SotW SnapshotCache sends the type without it")
	}
	assert.NotEmpty(t, eventsOf(ev, "remove", xdslog.EventAck, "SDS"), "and Envoy ACKs it")
}
