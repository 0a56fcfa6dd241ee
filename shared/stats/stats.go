// Package stats holds the few summary statistics the lab's reports share, so that
// summary.json, lab compare and lab bench compute a figure such as a median or a
// percentile one way.
package stats

import (
	"cmp"
	"math"
	"slices"
)

// Median is the middle value of xs, or the mean of the two middle values when len(xs)
// is even; xs is not reordered. It panics on an empty xs: a median of nothing is a
// caller's bug, not a zero.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted, which must be
// in ascending order: the smallest value with at least p% of the values at or below it,
// the one at rank ceil(p/100 x n). It is always one of the values (p99 of fewer than 100
// values is the largest), and for a latency it never reports a tail smaller than p% of
// the samples saw, which rounding the rank to the nearest would (p99 of 60 samples would
// be the 59th). p x n is divided by 100 last, so an integer p gives an exact rank. It
// panics on an empty sorted, as Median does.
func Percentile[T cmp.Ordered](sorted []T, p float64) T {
	if len(sorted) == 0 {
		panic("stats.Percentile of no values")
	}
	rank := int(math.Ceil(p * float64(len(sorted)) / 100))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
