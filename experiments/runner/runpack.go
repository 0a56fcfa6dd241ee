package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/xds-workbench/lab/shared/scenario"
)

// recordNotApplicable writes a refused scenario's directory: envoy.result says
// NOT_APPLICABLE and why; there is no run (no xds.log), so lab compare leaves it out.
func recordNotApplicable(dir string, why error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("record not applicable: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "envoy.result"), []byte("NOT_APPLICABLE: "+why.Error()+"\n"), 0o644); err != nil {
		return fmt.Errorf("record not applicable: %w", err)
	}
	return nil
}

// RunPack runs each scenario of scs (lab run --scenario all) with run in its own
// directory under the run directory ro.Out, one after the other, going on after a
// failure, with a line per scenario and a summary on progress; it fails when any
// scenario did. A scenario that does not apply to the run (scenario.IsNotApplicable) is
// not a failure: its directory keeps why (envoy.result NOT_APPLICABLE).
func RunPack(ctx context.Context, ro Options, scs []*scenario.Scenario, run func(context.Context, Options, io.Writer) error, progress io.Writer) error {
	base := ro.Out
	if base == "" {
		base = DefaultOut(ro.Mode)
	}
	var failed, skipped []string
	for i, sc := range scs {
		if ctx.Err() != nil {
			failed = append(failed, sc.Name+" (not run: interrupted)")
			continue
		}
		o := ro
		o.Scenario, o.Out = sc, filepath.Join(base, sc.Name)
		fmt.Fprintf(progress, "[%s] scenario %d/%d %s: %s\n", ro.Mode, i+1, len(scs), sc.Name, sc.Description)
		err := run(ctx, o, progress)
		switch {
		case scenario.IsNotApplicable(err):
			// Not a failure: the scenario is not for this run (an on-demand one in SotW).
			// Its reason is kept where a run's result would be.
			skipped = append(skipped, sc.Name)
			fmt.Fprintf(progress, "[%s] %v\n", ro.Mode, err)
			if werr := recordNotApplicable(o.Out, err); werr != nil {
				return werr
			}
		case err != nil:
			failed = append(failed, sc.Name)
		}
	}
	ran := len(scs) - len(skipped)
	fmt.Fprintf(progress, "[%s] pack: %d of %d scenarios ran without a failed step (each envoy.result says PASS, or NOT_RUN when the data plane was simulated); evidence under %s\n", ro.Mode, ran-len(failed), ran, base)
	if len(skipped) > 0 {
		fmt.Fprintf(progress, "[%s] pack: not applicable here (envoy.result says why): %s\n", ro.Mode, strings.Join(skipped, ", "))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d scenarios failed: %s", len(failed), len(scs), strings.Join(failed, ", "))
	}
	return nil
}
