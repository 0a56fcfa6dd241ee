package benchcore

import (
	"slices"
	"time"

	"github.com/xds-workbench/lab/shared/stats"
)

// Stat is the median, min and max of one metric over the repeats, and its quartiles
// (stats.Percentile: nearest rank), from which a ratio's spread is read.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	P25    float64 `json:"p25,omitempty"`
	P75    float64 `json:"p75,omitempty"`
	Count  int     `json:"count"`
}

func StatOf(v []float64) Stat {
	sorted := slices.Sorted(slices.Values(v))
	return Stat{Median: stats.Median(v), Min: sorted[0], Max: sorted[len(sorted)-1],
		P25: stats.Percentile(sorted, 25), P75: stats.Percentile(sorted, 75), Count: len(v)}
}

// Percentiles are p50, p99 and max of one figure over the Envoys x the repeats. The
// percentiles are stats.Percentile's nearest rank: the smallest value at least p% of the
// values do not exceed, always one of the values (p99 of fewer than 100 values is the
// max).
type Percentiles struct {
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	Count int     `json:"count"`
}

// PercentilesOf is p50, p99 and max of v (false without values).
func PercentilesOf(v []float64) (Percentiles, bool) {
	if len(v) == 0 {
		return Percentiles{}, false
	}
	s := slices.Sorted(slices.Values(v))
	return Percentiles{P50: stats.Percentile(s, 50), P99: stats.Percentile(s, 99), Max: s[len(s)-1], Count: len(s)}, true
}

// Millis is d in milliseconds, to the microsecond.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
