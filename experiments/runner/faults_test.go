package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// faultRun runs the teaching scenario against real Envoy with o's hooks and options on
// free ports, in dir, and returns the result and error.
func faultRun(t *testing.T, mode protocol.Mode, o Options) (string, *Result, error) {
	t.Helper()
	o.Mode, o.Client = mode, ClientEnvoy
	if o.StepTimeout == 0 {
		o.StepTimeout = 20 * time.Second
	}
	return runLogged(t, o, 90*time.Second, true)
}

// runLogged executes o in a temporary directory within timeout and logs the progress
// lines (always, or only when the run failed).
func runLogged(t *testing.T, o Options, timeout time.Duration, always bool) (string, *Result, error) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	o.Out = dir
	var progress strings.Builder
	var mu sync.Mutex
	o.Progress = writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return progress.Write(p)
	})
	res, err := Execute(ctx, o)
	if always || err != nil {
		mu.Lock()
		t.Logf("progress:\n%s", progress.String())
		mu.Unlock()
	}
	return dir, res, err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// rawCheckpoint reads a checkpoint whether or not it passed.
func rawCheckpoint(t *testing.T, dir, name string) Checkpoint {
	t.Helper()
	return readJSON[Checkpoint](t, filepath.Join(dir, name+".json"), "%s.json parses", name)
}

func readSummary(t *testing.T, dir string) Summary {
	t.Helper()
	return readJSON[Summary](t, filepath.Join(dir, "summary.json"))
}

func findCheck(c Checkpoint, prefix string) *Check {
	for i := range c.Checks {
		if strings.HasPrefix(c.Checks[i].What, prefix) {
			return &c.Checks[i]
		}
	}
	return nil
}

// killOnSend SIGKILLs Envoy the moment the step's first send is recorded (the library
// records a send just before writing it, so Envoy dies before it can answer), and, when
// twice is set, again when the restarted Envoy opens its stream. The kill runs in the
// tracker's hook, synchronously, so the step cannot finish before it. It returns how
// many kills were made.
func killOnSend(t *testing.T, r *Run, step string, twice bool) (kills func() int32) {
	var n atomic.Int32
	kill := func() {
		if err := r.KillClient(); err != nil {
			t.Errorf("kill: %v", err)
		}
		n.Add(1)
	}
	r.track.setHook(func(e xdslog.Event) {
		if e.Step != step {
			return
		}
		switch {
		case e.Event == xdslog.EventSend && n.Load() == 0:
			kill()
		case e.Event == xdslog.EventStreamOpen && n.Load() == 1 && twice:
			kill()
		}
	})
	return n.Load
}

// unanswered counts, per (server, stream), the sends no ACK, NACK or unmatched answer
// names: what the recorder must report as dropped when the stream closes.
func unanswered(ev []xdslog.Event, server int, stream int64) int {
	type key struct{ typ, nonce string }
	sent := map[key]bool{}
	for _, e := range ev {
		if e.Server != server || e.Stream != stream {
			continue
		}
		switch e.Event {
		case xdslog.EventSend:
			sent[key{e.Type, e.Nonce}] = true
		case xdslog.EventAck, xdslog.EventNack:
			delete(sent, key{e.Type, e.Nonce})
		}
	}
	return len(sent)
}

// runKillingEnvoy is faultRun with Envoy SIGKILLed in the port-change step (killOnSend;
// twice: again once restarted); it returns how many times Envoy was killed too.
func runKillingEnvoy(t *testing.T, mode protocol.Mode, twice bool) (dir string, res *Result, kills int32, err error) {
	t.Helper()
	var killed func() int32
	dir, res, err = faultRun(t, mode, Options{BeforeStep: func(_ context.Context, r *Run, st scenario.Step) error {
		if st.Name == "port-change" {
			killed = killOnSend(t, r, st.Name, twice)
		}
		return nil
	}})
	require.NotNil(t, killed)
	return dir, res, killed(), err
}

// TestEnvoyKilledMidStep: Envoy is SIGKILLed right after the port-change publish is
// sent. The runner notices, records the exit (check and progress line), restarts Envoy
// once and the step completes on the new process; xds.log has the broken stream's
// close with its unanswered sends counted as dropped.
func TestEnvoyKilledMidStep(t *testing.T) {
	envoytest.Require(t)
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			dir, res, kills, err := runKillingEnvoy(t, mode, false)
			require.EqualValues(t, 1, kills)
			require.NoError(t, err)
			assert.True(t, res.Passed)
			assert.Equal(t, "PASS", readLine(t, filepath.Join(dir, "envoy.result")))
			assert.Equal(t, "0", readLine(t, filepath.Join(dir, "run.exit")))

			upd := readCheckpoint(t, dir, "updated")
			assert.Equal(t, 1, upd.ProxyRestarts)
			c := findCheck(upd, "envoy exited: signal: killed")
			require.NotNil(t, c, "the checkpoint records the kill: %+v", upd.Checks)
			assert.True(t, c.OK, "the runner recovered from it: %s", c.Detail)
			assert.Contains(t, c.Detail, "restarted it")
			assertBackend(t, upd.Request, 200, "v2")

			ev := logEvents(t, dir)
			closes := eventsOf(ev, "port-change", xdslog.EventStreamClose, "")
			require.Len(t, closes, 1, "the killed Envoy's stream closed in the step")
			cl := closes[0]
			require.NotNil(t, cl.Dropped, "stream_close carries the dropped count")
			assert.Equal(t, unanswered(ev, cl.Server, cl.Stream), *cl.Dropped, "dropped = sends never answered on the broken stream")
			assert.Positive(t, *cl.Dropped, "Envoy died before answering the port-change send")
			t.Logf("the broken stream %d had %d unanswered send(s)", cl.Stream, *cl.Dropped)
			assert.Len(t, eventsOf(ev, "port-change", xdslog.EventStreamOpen, ""), 1, "the restarted Envoy opened one new stream")

			sum := readSummary(t, dir)
			assert.Equal(t, "PASS", sum.Result)
			assert.Len(t, sum.Steps, len(teachingSteps(t)))
		})
	}
}

// TestEnvoyKilledTwiceFailsStep: a second death in the same step is not retried: the
// step fails with a reason naming the kill, and summary.json, envoy.result and run.exit
// are still written.
func TestEnvoyKilledTwiceFailsStep(t *testing.T) {
	envoytest.Require(t)
	dir, res, kills, err := runKillingEnvoy(t, protocol.SotW, true)
	require.EqualValues(t, 2, kills)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "step port-change: envoy exited: signal: killed again")
	assert.NotContains(t, err.Error(), "\n")
	assert.False(t, res.Passed)
	result := readLine(t, filepath.Join(dir, "envoy.result"))
	assert.True(t, strings.HasPrefix(result, "FAIL: step port-change: envoy exited: signal: killed"), result)
	assert.Equal(t, "1", readLine(t, filepath.Join(dir, "run.exit")))

	sum := readSummary(t, dir)
	assert.Equal(t, result, sum.Result)
	require.Len(t, sum.Steps, 2)
	assert.Equal(t, "port-change", sum.Steps[1].Name)
	assert.Contains(t, sum.Steps[1].Failure, "signal: killed")
	require.NotNil(t, sum.Figures, "the figures are computed from what was logged")

	upd := rawCheckpoint(t, dir, "updated")
	assert.False(t, upd.Passed)
	assert.Equal(t, 1, upd.ProxyRestarts)
	var exits []Check
	for _, c := range upd.Checks {
		if strings.HasPrefix(c.What, "envoy exited: signal: killed") {
			exits = append(exits, c)
		}
	}
	require.Len(t, exits, 2, "%+v", upd.Checks)
	assert.True(t, exits[0].OK, "the first exit was recovered")
	assert.False(t, exits[1].OK, "the second was not")
}

// TestControlPlaneOutage: the xDS server stays down for 2s, longer than Envoy's first
// reconnect backoff. Every request during the outage is served from the last known good
// configuration, connected_state goes to 0 and back to 1, Envoy's reconnect attempts fail
// meanwhile, and after the restart the configuration converges again.
func TestControlPlaneOutage(t *testing.T) {
	envoytest.Require(t)
	const outage = 2 * time.Second
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			dir, _, err := faultRun(t, mode, Options{Outage: outage, OutageInterval: 200 * time.Millisecond})
			require.NoError(t, err)
			cpr := readCheckpoint(t, dir, "cp-restarted")
			for _, what := range []string{
				"Envoy saw the control plane go away (connected_state 0)",
				"Envoy stayed disconnected for the whole outage (every reconnect attempt failed)",
				"Envoy reconnected (connected_state 1)",
				"for the whole outage (2s) every request was answered 200 from v1",
			} {
				c := findCheck(cpr, what)
				require.NotNil(t, c, "check %q in %+v", what, cpr.Checks)
				assert.True(t, c.OK, "%s: %s", what, c.Detail)
			}
			require.NotNil(t, cpr.Outage)
			assert.GreaterOrEqual(t, cpr.Outage.DurationMS, float64(outage.Milliseconds()))
			require.GreaterOrEqual(t, len(cpr.Outage.Requests), 4, "several requests over the outage")
			assert.Equal(t, len(cpr.Outage.Requests), cpr.Outage.Served)
			first, last := cpr.Outage.Requests[0], cpr.Outage.Requests[len(cpr.Outage.Requests)-1]
			for _, o := range cpr.Outage.Requests {
				assertBackend(t, &o, 200, "v1")
				assert.False(t, o.Simulated)
				require.NotNil(t, o.Access, "Envoy's own access-log line")
				assert.Equal(t, ClassServed, o.Class)
			}
			t0, _ := time.Parse(time.RFC3339Nano, first.At)
			t1, _ := time.Parse(time.RFC3339Nano, last.At)
			assert.GreaterOrEqual(t, t1.Sub(t0), outage*3/4, "the requests span the outage")
			assert.Positive(t, cpr.Outage.ConnectFailures, "Envoy tried to reconnect (and failed) during the outage")
			assert.Equal(t, "1", cpr.EnvoyStats[statConnected])
			assertBackend(t, cpr.Request, 200, "v1")
			assert.Contains(t, strings.Join(checkNames(cpr), ";"), "the new stream subscribed to every type")
			assert.Equal(t, "PASS", readLine(t, filepath.Join(dir, "envoy.result")))
			// The outage requests are in xds.log too, labelled with the step (beside the
			// first request of the outage, "-outage-first-N", sent until it was answered).
			var outageLogged int
			for _, e := range eventsOf(logEvents(t, dir), "control-plane-restart", xdslog.EventDataPlane, "") {
				if strings.Contains(e.RequestID, "-outage-") && !strings.Contains(e.RequestID, "-outage-first-") {
					assert.Equal(t, xdslog.ProbeOutage, e.Probe)
					outageLogged++
				}
			}
			assert.Equal(t, len(cpr.Outage.Requests), outageLogged)
		})
	}
}

// TestPublishDuringReconnect: while Envoy is disconnected the state changes twice (an
// intermediate state with the cluster removed, then the newest with the endpoint on v2).
// After the reconnect Envoy runs the newest state and was never sent the intermediate
// one; in delta, the resources it already had are not re-sent.
func TestPublishDuringReconnect(t *testing.T) {
	envoytest.Require(t)
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			dir, _, err := faultRun(t, mode, Options{PublishDuringReconnect: true})
			require.NoError(t, err)
			cpr := readCheckpoint(t, dir, "cp-restarted")
			assert.Equal(t, "4.2", cpr.Version)
			assert.Contains(t, cpr.VersionNote, `"4.1" then "4.2"`)
			assertBackend(t, cpr.Request, 200, "v2")
			for _, what := range []string{
				`no send on the new server carried the intermediate version "4.1"`,
				`the first ACK of every type on the new server is of the newest version "4.2"`,
				"the new server sent exactly the resources that differ from what the proxy ran",
				"the new SotW server sent the whole newest state",
			} {
				if strings.Contains(what, "SotW") != (mode == protocol.SotW) && strings.HasPrefix(what, "the new") {
					continue
				}
				c := findCheck(cpr, what)
				require.NotNil(t, c, what)
				assert.True(t, c.OK, "%s: %s", what, c.Detail)
			}

			ev := logEvents(t, dir)
			pubs := eventsOf(ev, "control-plane-restart", xdslog.EventPublish, "")
			require.Len(t, pubs, 2)
			assert.Equal(t, "4.1", pubs[0].Version)
			assert.Equal(t, "4.2", pubs[1].Version)
			for _, e := range ev {
				if e.Server != 2 || e.Step != "control-plane-restart" {
					continue
				}
				switch e.Event {
				case xdslog.EventSend:
					assert.Equal(t, "4.2", e.Version, "%s: only the newest state is sent", e.Type)
				case xdslog.EventAck:
					assert.Equal(t, "4.2", e.SentVersion, "%s ACK", e.Type)
				case xdslog.EventNack:
					t.Errorf("unexpected NACK on the new server: %+v", e)
				}
			}
			sent := sentPerType(ev, 2)
			if mode == protocol.Delta {
				assert.Equal(t, map[string][]string{"EDS": {"inventory"}}, sent,
					"delta re-sends only the endpoints, the one resource that differs from what Envoy ran")
				for _, e := range eventsOf(ev, "control-plane-restart", xdslog.EventRequest, "") {
					if e.Server == 2 {
						assert.NotEmpty(t, e.InitialVersions, "%s: Envoy reconnects with what it runs", e.Type)
					}
				}
			} else {
				assert.Len(t, sent, 4, "SotW re-sends every type: %v", sent)
			}
			// Envoy's side: the subscriptions that were updated carry the newest label
			// (SotW: all four; an unchanged resource keeps its own version_info in the
			// config dump), and in delta the config dump's per-resource versions are the
			// newest state's hashes.
			updated := []string{"cluster.inventory."}
			if mode == protocol.SotW {
				updated = append(updated, "cluster_manager.cds.", "listener_manager.lds.", "http.quote.rds.quote-route.")
			}
			for _, p := range updated {
				assert.Equal(t, "4.2", cpr.EnvoyStats[p+"version_text"], p)
			}
			if mode == protocol.Delta {
				for _, r := range pubs[1].Resources {
					if r.Type != "EDS" {
						assert.Equal(t, r.Hash, cpr.EnvoyConfigVersions[r.Type+"/"+r.Name], "Envoy runs the newest %s/%s", r.Type, r.Name)
					}
				}
			}
			v2 := strings.TrimPrefix(rawRunInfo(t, dir).Inventory[1], "v2=127.0.0.1:")
			assert.Equal(t, v2, cpr.EnvoyConfigVersions["EDS/inventory port"], "Envoy's endpoint is v2's port")
			assert.Equal(t, "PASS", readLine(t, filepath.Join(dir, "envoy.result")), "the later steps still pass")
		})
	}
}

// sentPerType lists, per type, the resource names sent by server in the control-plane
// restart step.
func sentPerType(ev []xdslog.Event, server int) map[string][]string {
	out := map[string][]string{}
	for _, e := range eventsOf(ev, "control-plane-restart", xdslog.EventSend, "") {
		if e.Server != server {
			continue
		}
		for _, r := range e.Resources {
			out[e.Type] = append(out[e.Type], r.Name)
		}
	}
	return out
}

func rawRunInfo(t *testing.T, dir string) RunInfo {
	t.Helper()
	ri := readJSON[RunInfo](t, filepath.Join(dir, "run.json"))
	require.NotEmpty(t, ri.Inventory)
	return ri
}

// TestBackendDownIsUpstreamFailure: with inventory v1 stopped, requests that the
// configuration routes to it get 503 UF, which the checkpoint classifies as an upstream
// failure (not a config failure); starting v1 again restores 200.
func TestBackendDownIsUpstreamFailure(t *testing.T) {
	envoytest.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	started := false
	dir, _, err := faultRun(t, protocol.SotW, Options{BeforeStep: func(hctx context.Context, r *Run, st scenario.Step) error {
		if st.Name != "recover" {
			return nil
		}
		restart, err := r.StopBackend(hctx, "v1")
		if err != nil {
			return err
		}
		started = true
		go func() {
			defer close(done)
			// Bring v1 back once two requests of the step failed with UF.
			err := r.track.waitFor(ctx, "two UF answers", func() (bool, error) {
				ev, _, err := xdslog.ReadFile(r.Dir())
				if err != nil {
					return false, nil
				}
				n := 0
				for _, e := range eventsOf(ev, "recover", xdslog.EventDataPlane, "") {
					if e.Flags == "UF" {
						n++
					}
				}
				return n >= 2, nil
			})
			if err != nil {
				t.Errorf("waiting for UF answers: %v", err)
			}
			if err := restart(); err != nil {
				t.Errorf("restart v1: %v", err)
			}
		}()
		return nil
	}})
	require.True(t, started)
	<-done
	require.NoError(t, err)
	rec := readCheckpoint(t, dir, "recovered")
	assertBackend(t, rec.Request, 200, "v1")
	assert.Equal(t, ClassServed, rec.Request.Class)
	var uf int
	for _, m := range rec.Misses {
		assert.NotEqual(t, ClassConfigFailure, m.Class, "%+v", m)
		if m.Status == 503 && m.Flags == "UF" {
			uf++
			assert.Equal(t, ClassUpstreamFailure, m.Class)
			require.NotNil(t, m.Access)
			assert.Equal(t, "inventory", m.Access.UpstreamCluster, "the config routed it: the upstream failed")
		}
	}
	assert.GreaterOrEqual(t, uf, 2, "misses: %+v", rec.Misses)
	// The removal step, by contrast, is a config failure.
	rm := readCheckpoint(t, dir, "removed")
	assert.Equal(t, ClassConfigFailure, rm.Request.Class)
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		status int
		flags  string
		want   string
	}{
		{200, "", ClassServed},
		{404, "", ClassServed},
		{0, "", ClassNoResponse},
		{503, "UF", ClassUpstreamFailure},
		{503, "UH", ClassUpstreamFailure},
		{503, "UF,URX", ClassUpstreamFailure},
		{504, "UT", ClassUpstreamFailure},
		{503, "NC", ClassConfigFailure},
		{404, "NR", ClassConfigFailure},
		{503, "UF,NC", ClassConfigFailure},
		{500, "", ClassOther},
		{503, "XYZ", ClassOther},
	} {
		assert.Equal(t, c.want, Classify(c.status, c.flags), "%d %q", c.status, c.flags)
	}
}

// TestNackStormBounded: SotW with --nack-policy resend against real Envoy is a NACK
// storm (the library re-sends the rejected route at once, Envoy rejects it again). Held
// open for 2s, the run still finishes the step on time, every NACK is in xds.log (as
// many as Envoy's update_rejected counted, each answering a recorded send), the control
// plane's heap stays flat, and the storm's rate is in the checkpoint and summary.json.
func TestNackStormBounded(t *testing.T) {
	envoytest.Require(t)
	const storm = 2 * time.Second
	var heap []uint64
	dir, _, err := faultRun(t, protocol.SotW, Options{NackPolicy: sotw.Resend,
		AfterStep: func(ctx context.Context, r *Run, st scenario.Step, _ *Checkpoint) error {
			if st.Name != "invalid-route" {
				return nil
			}
			// Sample the heap while the storm goes on; a measurement over a fixed
			// window, not a wait for a condition.
			end := time.Now().Add(storm)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap = append(heap, ms.HeapInuse)
				if time.Now().After(end) {
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-tick.C:
				}
			}
		}})
	require.NoError(t, err)

	rej := readCheckpoint(t, dir, "rejected-keeps-v2")
	assert.Less(t, rej.DurationMS, 10000.0, "the step finished on time despite the storm")
	assertBackend(t, rej.Request, 200, "v2")

	ev := logEvents(t, dir)
	type key struct {
		server int
		stream int64
		typ    string
		nonce  string
	}
	sends := map[key]bool{}
	nacks := 0
	for _, e := range ev {
		k := key{e.Server, e.Stream, e.Type, e.Nonce}
		switch e.Event {
		case xdslog.EventSend:
			sends[k] = true
		case xdslog.EventNack:
			require.True(t, sends[k], "NACK %+v answers a recorded send", k)
			if e.Type == "RDS" {
				nacks++
			}
		case xdslog.EventUnmatched:
			t.Errorf("unmatched feedback in the storm: %+v", e)
		}
	}
	upd := readCheckpoint(t, dir, "updated")
	recov := readCheckpoint(t, dir, "recovered")
	before, _ := strconv.Atoi(upd.EnvoyStats["http.quote.rds.quote-route."+"update_rejected"])
	after, _ := strconv.Atoi(recov.EnvoyStats["http.quote.rds.quote-route."+"update_rejected"])
	assert.Equal(t, after-before, nacks, "every NACK Envoy counted is in xds.log")
	assert.Greater(t, nacks, 20, "a storm, not a single NACK")

	require.GreaterOrEqual(t, len(heap), 10)
	first, last := heap[0], heap[len(heap)-1]
	t.Logf("storm: %d NACKs; heap in use %d -> %d bytes over %d samples", nacks, first, last, len(heap))
	assert.LessOrEqual(t, last, 2*first+16<<20, "the control plane's heap stays flat during the storm")

	assert.Positive(t, rej.NackRate, "the checkpoint reports the storm's rate")
	sum := readSummary(t, dir)
	require.NotNil(t, sum.Figures)
	st := sum.Figures.Step("invalid-route")
	require.NotNil(t, st)
	assert.Positive(t, st.NackRate, "summary.json reports the storm's rate")
	assert.Equal(t, nacks, st.Total.Nacks+sum.Figures.Step("recover").Total.Nacks)
	t.Logf("storm rate: %.0f NACK/s (checkpoint, in-step %.0f/s)", st.NackRate, rej.NackRate)
}

// TestInterruptedRunWritesResult: a run whose context ends in the middle of a step
// writes the interruption at that step, run.exit 130 and whole files (simulated client:
// envoy.result is NOT_RUN with the reason).
func TestInterruptedRunWritesResult(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Execute(ctx, Options{Mode: protocol.Delta, Client: ClientSim, Out: dir,
		BeforeStep: func(_ context.Context, _ *Run, st scenario.Step) error {
			if st.Name == "recover" {
				cancel() // as SIGINT does
			}
			return nil
		}})
	require.Error(t, err)
	assert.Equal(t, "interrupted at recover", err.Error())
	assert.Equal(t, "NOT_RUN (simulated client; run interrupted at recover)", readLine(t, filepath.Join(dir, "envoy.result")))
	assert.Equal(t, "130", readLine(t, filepath.Join(dir, "run.exit")))
	sum := readSummary(t, dir)
	require.Len(t, sum.Steps, 4)
	assert.Equal(t, StepResult{Name: "recover", Failure: "interrupted"}, sum.Steps[3])
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		assert.NotContains(t, e.Name(), ".tmp-")
		if strings.HasSuffix(e.Name(), ".json") {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			assert.True(t, json.Valid(b), e.Name())
		}
	}
}
