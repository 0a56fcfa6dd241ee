package stats

import (
	"slices"
	"testing"
	"time"
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

// TestPercentile pins the one rounding rule: the rank is ceil(p/100 x n), so the value
// has at least p% of the values at or below it.
func TestPercentile(t *testing.T) {
	one := []float64{7}
	five := []float64{1, 2, 3, 4, 5}
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	sixty := make([]float64, 60)
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
		if i < len(sixty) {
			sixty[i] = float64(i + 1)
		}
	}
	for _, c := range []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"one value is every percentile", one, 50, 7},
		{"one value, p99", one, 99, 7},
		{"n=5 p25: rank ceil(1.25) = 2, not the nearest rank 1", five, 25, 2},
		{"n=5 p50: the middle", five, 50, 3},
		{"n=5 p99: the largest", five, 99, 5},
		{"n=5 p100: the largest", five, 100, 5},
		{"n=5 p20: exactly the first fifth", five, 20, 1},
		{"n=10 p50: the lower middle, a value, not a mean", ten, 50, 5},
		{"n=10 p90", ten, 90, 9},
		{"n=10 p99: the largest", ten, 99, 10},
		{"n=60 p99: rank ceil(59.4) = 60, not the nearest rank 59", sixty, 99, 60},
		{"n=100 p99: exactly rank 99", hundred, 99, 99},
		{"n=100 p1", hundred, 1, 1},
		{"a tiny p is the smallest", hundred, 0.001, 1},
	} {
		if got := Percentile(c.sorted, c.p); got != c.want {
			t.Errorf("%s: Percentile(n=%d, %v) = %v, want %v", c.name, len(c.sorted), c.p, got, c.want)
		}
	}
}

// TestPercentileOfDurations: any ordered type, such as a latency.
func TestPercentileOfDurations(t *testing.T) {
	d := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	if got := Percentile(d, 50); got != 2*time.Millisecond {
		t.Errorf("Percentile(%v, 50) = %v, want 2ms", d, got)
	}
}

func TestPercentileOfNothingPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Percentile(nil, 50) did not panic")
		}
	}()
	Percentile([]float64(nil), 50)
}
