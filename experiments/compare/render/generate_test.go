package render

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// update regenerates the committed test data. TestGenerateTestdata runs the scenario and
// rewrites the run directories and then the golden files (they derive from the logs);
// TestGolden alone rewrites only the golden files from the committed logs:
//
//	go test ./experiments/compare -run TestGenerateTestdata -update   # runs and goldens
//	go test ./experiments/compare -run TestGolden -update             # goldens only
var update = flag.Bool("update", false, "regenerate testdata/ (run directories and golden files)")

// only limits TestGenerateTestdata -update to some run directories (comma list of their
// testdata paths, e.g. sotw-linear,scaled/sotw), so that adding fixtures does not
// re-record the committed ones (and the goldens drawn from them).
var only = flag.String("only", "", "with -update: regenerate only these testdata run directories (comma list)")

// wanted reports whether -only selects the fixture directory dir.
func wanted(dir string) bool {
	if *only == "" {
		return true
	}
	return slices.Contains(strings.Split(*only, ","), dir)
}

// fixtures are the run directories TestGenerateTestdata writes: the scenario `lab run`
// runs (experiments/runner on shared/scenario.Teaching, so there is one definition of
// it), with the simulated client, in the configurations `make lab` compares: each
// protocol with the SnapshotCache and with the LinearCache, and SotW per-type with hold.
var fixtures = []struct {
	dir        string
	mode       protocol.Mode
	versions   publish.VersionStrategy
	nackPolicy sotw.NackPolicy
	cache      publish.Cache
	// stormNacks is how many NACKs the invalid-route step must have recorded before the
	// run moves on to recover, whose publish ends the storm (0: no storm to wait for).
	stormNacks int
}{
	{"sotw", protocol.SotW, publish.Uniform, sotw.Resend, "", stormNacks},
	{"delta", protocol.Delta, "", "", "", 0},
	{"sotw-per-type-hold", protocol.SotW, publish.PerType, sotw.Hold, "", 0},
	{"sotw-linear", protocol.SotW, publish.PerType, sotw.Hold, publish.LinearCache, 0},
	{"delta-linear", protocol.Delta, "", "", publish.LinearCache, 0},
}

// stormNacks keeps the committed SotW NACK storm longer than a rendered diagram
// (DiagramCap), so the goldens show the "... K more" summary. Left alone, the storm lasts
// from the invalid-route publish to the recover publish, which with the simulated client
// is anywhere from a few to a few hundred NACKs.
const stormNacks = 30

// fixtureFiles are the files of a run directory that Load reads. The runner writes more
// (checkpoints, summary.json, backend logs); they stay out of testdata.
var fixtureFiles = []string{"xds.log", "run.json", "envoy.result"}

// maxFixtureLog bounds a committed xds.log. With --nack-policy resend the SotW NACK storm
// lasts from the invalid-route publish to the recover publish: a few milliseconds and a
// few hundred NACKs with the simulated client. A much larger log means the machine
// stalled the run between the two steps; run the generator again rather than commit it.
const maxFixtureLog = 1 << 20

func TestGenerateTestdata(t *testing.T) {
	// A generator, not a check: without -update it does nothing (returning rather than
	// skipping, so `make test`'s skip line lists only tests that lack a component).
	if !*update {
		return
	}
	for _, fx := range fixtures {
		if !wanted(fx.dir) {
			continue
		}
		out := filepath.Join(t.TempDir(), fx.dir)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		o := runner.Options{Mode: fx.mode, Client: runner.ClientSim, Out: out, Versions: fx.versions, NackPolicy: fx.nackPolicy, Cache: fx.cache}
		if fx.stormNacks > 0 {
			// The runner's own hook for holding a storm open: after invalid-route's
			// checkpoint, before recover publishes.
			o.AfterStep = func(ctx context.Context, r *runner.Run, st scenario.Step, _ *runner.Checkpoint) error {
				if st.Name != "invalid-route" {
					return nil
				}
				return waitForNacks(ctx, filepath.Join(r.Dir(), "xds.log"), st.Name, fx.stormNacks)
			}
		}
		res, err := runner.Execute(ctx, o)
		cancel()
		require.NoError(t, err, "lab run --client sim --mode %s for testdata/%s", fx.mode, fx.dir)
		require.True(t, res.Passed, "testdata/%s: the run did not pass: %s", fx.dir, res.Failure)

		commitFixture(t, out, fx.dir)
	}
	for _, fx := range scaledFixtures {
		if dir := filepath.Join("scaled", fx.dir); wanted(dir) {
			commitFixture(t, generateScaled(t, fx), dir)
		}
	}
	writeGoldens(t)
}

// commitFixture copies the files Load reads from the run directory out to testdata/dir.
func commitFixture(t *testing.T, out, dir string) {
	t.Helper()
	dst := filepath.Join("testdata", dir)
	// Start from an empty directory: nothing of an older generator may linger.
	require.NoError(t, os.RemoveAll(dst))
	require.NoError(t, os.MkdirAll(dst, 0o755))
	for _, name := range fixtureFiles {
		data, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err, "testdata/%s: the generator wrote no %s", dir, name)
		if name == "xds.log" {
			require.Less(t, len(data), maxFixtureLog, "testdata/%s: xds.log of %d bytes: the NACK storm ran long; generate again", dir, len(data))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dst, name), data, 0o644), "write testdata/%s/%s", dir, name)
	}
}

// scaledFixtures are runs of a small scaled state (resources.State.Clusters: three
// clusters, then four, then three again) in each protocol with each cache, SotW per-type
// with hold so that the cache is all that differs. They show what one resource per type
// cannot: with several resources of a type, which cache re-sends the unchanged ones.
// The scenario has no runner of its own; generateScaled drives the control plane and the
// simulated client directly.
var scaledFixtures = []struct {
	dir   string
	mode  protocol.Mode
	cache publish.Cache
}{
	{"sotw", protocol.SotW, publish.SnapshotCache},
	{"delta", protocol.Delta, publish.SnapshotCache},
	{"sotw-linear", protocol.SotW, publish.LinearCache},
	{"delta-linear", protocol.Delta, publish.LinearCache},
}

// scaledSteps are the scaled fixtures' steps: one endpoint of three changes (EDS), a
// fourth cluster joins (CDS, RDS and a new EDS subscription), and it leaves again.
var scaledSteps = []struct {
	name  string
	state resources.State
}{
	{"initial", resources.State{Version: "1", InventoryPort: 18080, Clusters: 3}},
	{"one-endpoint", resources.State{Version: "2", InventoryPort: 18080, Clusters: 3, EndpointPorts: map[int]int{1: 18081}}},
	{"add-cluster", resources.State{Version: "3", InventoryPort: 18080, Clusters: 4, EndpointPorts: map[int]int{1: 18081}}},
	{"remove-cluster", resources.State{Version: "4", InventoryPort: 18080, Clusters: 3, EndpointPorts: map[int]int{1: 18081}}},
}

// generateScaled runs the scaled steps against a control plane on a free loopback port
// with one simulated client, and returns the run directory (xds.log, run.json,
// envoy.result NOT_RUN: no data plane was asked). Each step waits until the client runs
// the published state and every send of the step is answered.
func generateScaled(t *testing.T, fx struct {
	dir   string
	mode  protocol.Mode
	cache publish.Cache
}) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), fx.dir)
	require.NoError(t, os.MkdirAll(out, 0o755))
	logPath := filepath.Join(out, "xds.log")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := controlplane.Options{Mode: fx.mode, Addr: "127.0.0.1:0", Recorder: xdslog.NewRecorder(f, fx.mode), Cache: fx.cache}
	meta := compareMeta{Mode: fx.mode, Client: "simulated", Cache: string(fx.cache), Started: time.Now().UTC().Format(time.RFC3339Nano)}
	if fx.mode == protocol.SotW {
		o.Versions, o.NackPolicy = publish.PerType, sotw.Hold
		meta.SotwVersions, meta.NackPolicy = string(o.Versions), string(o.NackPolicy)
	}
	cp, err := controlplane.Start(ctx, o)
	require.NoError(t, err)
	defer cp.Stop()
	client, err := simclient.New(fx.mode, "")
	require.NoError(t, err)
	conn, err := grpc.NewClient("passthrough:///"+cp.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	clientCtx, stopClient := context.WithCancel(ctx)
	done := make(chan struct{})
	defer func() { stopClient(); <-done }()
	for i, st := range scaledSteps {
		meta.Steps = append(meta.Steps, st.name)
		cp.Recorder().SetStep(st.name)
		set, err := cp.Publish(ctx, st.state)
		require.NoError(t, err, "%s: publish %s", fx.dir, st.name)
		if i == 0 {
			go func() { defer close(done); _ = client.Run(clientCtx, conn) }()
		}
		_, err = client.WaitFor(ctx, func(s simclient.State) bool { return runs(s, set) })
		require.NoError(t, err, "%s: the client runs the state of %s", fx.dir, st.name)
		require.Eventually(t, func() bool { return answered(t, logPath, st.name) }, 30*time.Second, 5*time.Millisecond,
			"%s: every send of %s answered", fx.dir, st.name)
	}
	data, err := json.MarshalIndent(meta, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, "run.json"), append(data, '\n'), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "envoy.result"), []byte("NOT_RUN\n"), 0o644))
	return out
}

// compareMeta is the run.json of a generated scaled run: the fields Load reads.
type compareMeta struct {
	Mode         protocol.Mode `json:"mode"`
	Client       string        `json:"client"`
	SotwVersions string        `json:"sotw_versions,omitempty"`
	NackPolicy   string        `json:"nack_policy,omitempty"`
	Cache        string        `json:"cache"`
	Started      string        `json:"started"`
	Steps        []string      `json:"steps"`
}

// runs reports whether the client runs every resource of set. LDS and CDS hold exactly
// the set (full state); RDS and EDS may hold more: a SotW client keeps the endpoints of a
// removed cluster until they are superseded, which no response says.
func runs(s simclient.State, set *resources.Set) bool {
	for _, typ := range resources.Types {
		if (typ == resources.LDS || typ == resources.CDS) && len(s.Accepted[typ]) != set.ByType[typ].Len() {
			return false
		}
		for _, r := range set.ByType[typ].All() {
			if s.Accepted[typ][r.Name].Hash != r.Hash {
				return false
			}
		}
	}
	return true
}

// answered reports whether the log holds an ACK or NACK for every send of step (it is
// read while the recorder appends: a line being written is skipped until the next look).
func answered(t *testing.T, path, step string) bool {
	ev, _, err := xdslog.ReadFile(path)
	if err != nil {
		return false
	}
	sends, answers := 0, 0
	for _, e := range ev {
		switch {
		case e.Step != step:
		case e.Event == xdslog.EventSend:
			sends++
		case e.Event == xdslog.EventAck || e.Event == xdslog.EventNack:
			answers++
		}
	}
	return sends > 0 && answers >= sends
}

// waitForNacks waits until the log at path holds n NACKs in step, for at most 30 s. The
// log is read while the recorder appends to it: a line still being written is skipped
// and counted on the next look.
func waitForNacks(ctx context.Context, path, step string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	got := 0
	for {
		ev, _, err := xdslog.ReadFile(path)
		if err != nil {
			return fmt.Errorf("wait for %d NACKs in %s: %w", n, step, err)
		}
		got = 0
		for _, e := range ev {
			if e.Step == step && e.Event == xdslog.EventNack {
				got++
			}
		}
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %d of %d NACKs before %w", step, got, n, ctx.Err())
		case <-tick.C:
		}
	}
}
