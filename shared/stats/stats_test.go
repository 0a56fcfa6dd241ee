package stats

import (
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5, 5}, 5},
	} {
		in := slices.Clone(c.xs)
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", in, got, c.want)
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("Median reordered its argument: %v, was %v", c.xs, in)
		}
	}
}

func TestMedianOfNothingPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Median(nil) did not panic")
		}
	}()
	Median(nil)
}
