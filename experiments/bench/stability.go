package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
)

// Stability says whether a configuration's medians held: with Options.UntilStable the
// bench measures Repeat changes, then more in batches, until a batch moves neither the
// median of publish-to-last-ACK nor that of control-plane CPU by more than StableDrift
// (or the cap is reached, and it says so). A median from a handful of changes on a
// shared 2-core machine can be off by half; this is how a figure says it was not.
type Stability struct {
	// Checked is false when the workload cannot repeat beyond Repeat (cluster-add and
	// cluster-remove change N with every change); Reason says so.
	Checked bool   `json:"checked"`
	Reason  string `json:"reason,omitempty"`
	// Stable: the last batch moved each checked median by at most StableDrift.
	Stable bool `json:"stable"`
	// Changes is how many changes were measured; Drift the last batch's relative move
	// of each checked median.
	Changes int                `json:"changes"`
	Drift   map[string]float64 `json:"drift,omitempty"`
}

// StableDrift is how far one more batch may move a median that is called stable (5 %).
const StableDrift = 0.05

// stableMetrics are the medians a batch must not move: the time to converge and the
// control plane's CPU, the two figures the floor is judged on.
var stableMetrics = []string{"ack_ms", "cp_cpu_ms"}

// stableCap is how many times Repeat the bench measures at most (and MaxRepeat).
const stableCap = 4

// measureRepeats measures the configuration's changes (repeat 1..Repeat, then batches
// while UntilStable and the medians move), each sample with the load average it ran in.
func (r *configRun) measureRepeats(ctx context.Context) error {
	want := r.e.Options.Repeat
	limit := want
	extend := r.e.Options.UntilStable && repeatable(r.w)
	if extend {
		limit = min(stableCap*want, benchcore.MaxRepeat)
	}
	batch := max(3, want/2)
	var before map[string]float64
	for i := 1; i <= limit; i++ {
		load := benchcore.LoadAvg()
		s, err := r.measure(ctx, "update-"+strconv.Itoa(i), i)
		if err != nil {
			return fmt.Errorf("repeat %d: %w", i, err)
		}
		s.LoadAvg = load
		r.cfg.Updates = append(r.cfg.Updates, s)
		r.say("repeat %d/%d: %s", i, want, s.brief())
		if !extend || i < want || (i-want)%batch != 0 {
			continue
		}
		now := medians(r.cfg.Updates)
		if before != nil {
			st := stabilityOf(before, now, i)
			r.cfg.Stability = &st
			if st.Stable {
				return nil
			}
		}
		before = now
	}
	if extend && (r.cfg.Stability == nil || !r.cfg.Stability.Stable) {
		r.say("medians not stable after %d changes (cap %d x --repeat): say so with the figures", len(r.cfg.Updates), stableCap)
	}
	if !extend && r.e.Options.UntilStable {
		r.cfg.Stability = &Stability{Reason: "the " + r.w + " workload changes N with every change: measured --repeat times only", Changes: len(r.cfg.Updates)}
	}
	return nil
}

// repeatable: the workload can change more times than --repeat at the same N.
func repeatable(w string) bool {
	return w != benchcore.WorkloadClusterAdd && w != benchcore.WorkloadClusterRemove
}

func medians(samples []Sample) map[string]float64 {
	all := summarize(samples)
	out := map[string]float64{}
	for _, k := range stableMetrics {
		if st, ok := all[k]; ok {
			out[k] = st.Median
		}
	}
	return out
}

// stabilityOf compares the medians before and after the last batch.
func stabilityOf(before, now map[string]float64, changes int) Stability {
	st := Stability{Checked: true, Stable: true, Changes: changes, Drift: map[string]float64{}}
	for _, k := range stableMetrics {
		b, a := before[k], now[k]
		if b <= 0 {
			continue
		}
		d := math.Abs(a-b) / b
		st.Drift[k] = d
		if d > StableDrift {
			st.Stable = false
		}
	}
	return st
}

// ratioSpread is the range a ratio of medians a/b can take within the middle halves of the
// two samples: [a's p25 ÷ b's p75, a's p75 ÷ b's p25]. A ratio whose spread straddles 1
// is not a difference.
func ratioSpread(a, b benchcore.Stat) [2]float64 {
	if b.P75 <= 0 || b.P25 <= 0 {
		return [2]float64{}
	}
	return [2]float64{a.P25 / b.P75, a.P75 / b.P25}
}
