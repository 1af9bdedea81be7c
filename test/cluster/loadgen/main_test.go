package main

import (
	"math"
	"testing"
)

func TestQuantile_InterpolatesWithinABucketAsPrometheusDoes(t *testing.T) {
	// 10 requests <= 5 ms, 9 more <= 25 ms, 1 more <= 100 ms.
	h := toHistogram(map[float64]float64{0.005: 10, 0.025: 19, 0.1: 20, math.Inf(1): 20})
	for _, tc := range []struct{ q, want float64 }{
		{0.5, 0.005},   // rank 10: the top of the first bucket
		{0.25, 0.0025}, // rank 5: half-way through the first bucket, from 0
		{0.95, 0.025},  // rank 19: the top of the second
		{0.99, 0.085},  // rank 19.8: 80 % of the way from 25 to 100 ms
	} {
		if got := h.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("q%v = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := toHistogram(map[float64]float64{0.005: 0, math.Inf(1): 3}).quantile(0.5); got != 0.005 {
		t.Errorf("a quantile in the +Inf bucket is the highest finite bound: got %v", got)
	}
	if got := toHistogram(map[float64]float64{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("no observations: got %v, want NaN", got)
	}
}
