package churn

import (
	"bytes"
	"encoding/csv"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/xds-workbench/lab/experiments/chart"
)

// Sample is one look at the process every SampleEvery.
type Sample struct {
	Elapsed time.Duration `json:"elapsed"`
	// HeapBytes is runtime.MemStats.HeapAlloc after a runtime.GC: live data.
	HeapBytes  uint64 `json:"heap_bytes"`
	Goroutines int    `json:"goroutines"`
	// FDs counts /proc/self/fd.
	FDs int `json:"fds"`
	// LogBytes is the size of every xds.log together.
	LogBytes  int64 `json:"log_bytes"`
	Publishes int64 `json:"publishes"`
	Connected int64 `json:"connected"`
	Restarts  int64 `json:"envoy_restarts"`
}

// takeSample reads the process's figures; the rest are filled in by the caller.
func takeSample() Sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, _ := os.ReadDir("/proc/self/fd")
	return Sample{HeapBytes: ms.HeapAlloc, Goroutines: runtime.NumGoroutine(), FDs: len(fds)}
}

// writeCSV writes samples.csv: one row per sample.
func writeCSV(path string, samples []Sample) error {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"elapsed_s", "heap_bytes", "goroutines", "fds", "log_bytes", "publishes", "connected", "envoy_restarts"})
	for _, s := range samples {
		_ = w.Write([]string{strconv.FormatFloat(s.Elapsed.Seconds(), 'f', 1, 64), strconv.FormatUint(s.HeapBytes, 10),
			strconv.Itoa(s.Goroutines), strconv.Itoa(s.FDs), strconv.FormatInt(s.LogBytes, 10),
			strconv.FormatInt(s.Publishes, 10), strconv.FormatInt(s.Connected, 10), strconv.FormatInt(s.Restarts, 10)})
	}
	w.Flush()
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// samples.svg's geometry: one small strip per series, stacked.
var stripFrame = chart.StripFrame{W: 640, StripH: 90, Pad: 30}

// stripSeries are the charted series: each drawn against its own maximum, so a strip
// shows shape (flat or growing), and its label says the range.
var stripSeries = []struct {
	name string
	v    func(Sample) float64
}{
	{"heap MiB", func(s Sample) float64 { return float64(s.HeapBytes) / (1 << 20) }},
	{"goroutines", func(s Sample) float64 { return float64(s.Goroutines) }},
	{"open fds", func(s Sample) float64 { return float64(s.FDs) }},
	{"xds.log MiB", func(s Sample) float64 { return float64(s.LogBytes) / (1 << 20) }},
}

// chartSVG draws samples.svg: a strip per series against the run's elapsed time, drawn by
// the chart kit (experiments/chart).
func chartSVG(samples []Sample) []byte {
	at := make([]float64, len(samples))
	for i, s := range samples {
		at[i] = s.Elapsed.Seconds()
	}
	strips := make([]chart.Strip, len(stripSeries))
	for i, sr := range stripSeries {
		strips[i].Name = sr.name
		for _, s := range samples {
			strips[i].Values = append(strips[i].Values, sr.v(s))
		}
	}
	return chart.Strips(stripFrame, at, strips)
}
