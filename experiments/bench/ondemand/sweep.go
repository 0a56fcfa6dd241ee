package ondemand

import (
	"context"
	"fmt"
	"time"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/progress"
)

// Sweep runs every (N, shape, series) of the on-demand axis and returns
// the configurations, in run order, and the failed ones.
func Sweep(ctx context.Context, e *benchcore.Env, ser []benchcore.Series, start time.Time) (cfgs []*OnDemandConfig, failed []string) {
	total, k := len(e.Options.Clusters)*len(e.Options.OnDemand)*len(ser), 0
	for _, n := range e.Options.Clusters {
		for _, od := range e.Options.OnDemand {
			for _, s := range ser {
				if ctx.Err() != nil {
					return cfgs, failed
				}
				k++
				e.Say("%s on-demand %s N=%d %s%s", progress.Mark(k, total), benchcore.ShapeName(od), n, s.Name, progress.Left(time.Since(start), k-1, total))
				cfg := runOnDemand(ctx, e, s, od, n)
				cfgs = append(cfgs, cfg)
				if cfg.Error != "" {
					failed = append(failed, fmt.Sprintf("on-demand %s %s N=%d: %s", cfg.Shape, s.Name, n, cfg.Error))
					e.Say("[on-demand %s N=%d %s] FAILED: %s", cfg.Shape, n, s.Name, cfg.Error)
				}
			}
		}
	}
	return cfgs, failed
}
