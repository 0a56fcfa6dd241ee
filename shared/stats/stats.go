// Package stats holds the few summary statistics the lab's reports share, so that
// summary.json, lab compare and lab bench compute a figure such as a median one way.
package stats

import "slices"

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
