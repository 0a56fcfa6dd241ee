package churn

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
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

// SVG geometry: one small panel per series, stacked.
const (
	svgW, panelH, svgPad = 640.0, 90.0, 30.0
)

// svgSeries are the charted series: each drawn against its own maximum, so a panel
// shows shape (flat or growing), and its label says the range.
var svgSeries = []struct {
	name string
	v    func(Sample) float64
}{
	{"heap MiB", func(s Sample) float64 { return float64(s.HeapBytes) / (1 << 20) }},
	{"goroutines", func(s Sample) float64 { return float64(s.Goroutines) }},
	{"open fds", func(s Sample) float64 { return float64(s.FDs) }},
	{"xds.log MiB", func(s Sample) float64 { return float64(s.LogBytes) / (1 << 20) }},
}

// chartSVG draws samples as a small hand-written SVG.
func chartSVG(samples []Sample) []byte {
	var b bytes.Buffer
	h := svgPad + float64(len(svgSeries))*(panelH+svgPad)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", svgW, h)
	end := 1.0
	if n := len(samples); n > 0 && samples[n-1].Elapsed > 0 {
		end = samples[n-1].Elapsed.Seconds()
	}
	for i, sr := range svgSeries {
		y0 := svgPad + float64(i)*(panelH+svgPad)
		hi := 0.0
		for _, s := range samples {
			hi = max(hi, sr.v(s))
		}
		if hi == 0 {
			hi = 1
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s (0-%.1f) over %.0f s</text>`+"\n", svgPad, y0-6, sr.name, hi, end)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#ccc"/>`+"\n", svgPad, y0, svgW-2*svgPad, panelH)
		b.WriteString(`<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="`)
		for _, s := range samples {
			x := svgPad + s.Elapsed.Seconds()/end*(svgW-2*svgPad)
			y := y0 + panelH - sr.v(s)/hi*panelH
			fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
		}
		b.WriteString("\"/>\n")
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
