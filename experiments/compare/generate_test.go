package compare

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/shared/frontend"
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

// fixtures are the run directories TestGenerateTestdata writes: the scenario `lab run`
// runs (experiments/runner on shared/scenario.Teaching, so there is one definition of
// it), with the simulated client, in the three configurations `make lab` compares.
var fixtures = []struct {
	dir        string
	mode       string
	versions   frontend.VersionStrategy
	nackPolicy sotw.NackPolicy
	// stormNacks is how many NACKs the invalid-route step must have recorded before the
	// run moves on to recover, whose publish ends the storm (0: no storm to wait for).
	stormNacks int
}{
	{"sotw", xdslog.ModeSotW, frontend.Uniform, sotw.Resend, stormNacks},
	{"delta", xdslog.ModeDelta, "", "", 0},
	{"sotw-per-type-hold", xdslog.ModeSotW, frontend.PerType, sotw.Hold, 0},
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
		out := filepath.Join(t.TempDir(), fx.dir)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		o := runner.Options{Mode: fx.mode, Client: runner.ClientSim, Out: out, Versions: fx.versions, NackPolicy: fx.nackPolicy}
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

		dst := filepath.Join("testdata", fx.dir)
		// Start from an empty directory: nothing of an older generator may linger.
		require.NoError(t, os.RemoveAll(dst))
		require.NoError(t, os.MkdirAll(dst, 0o755))
		for _, name := range fixtureFiles {
			data, err := os.ReadFile(filepath.Join(out, name))
			require.NoError(t, err, "testdata/%s: the runner wrote no %s", fx.dir, name)
			if name == "xds.log" {
				require.Less(t, len(data), maxFixtureLog, "testdata/%s: xds.log of %d bytes: the NACK storm ran long; generate again", fx.dir, len(data))
			}
			require.NoError(t, os.WriteFile(filepath.Join(dst, name), data, 0o644), "write testdata/%s/%s", fx.dir, name)
		}
	}
	writeGoldens(t)
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
