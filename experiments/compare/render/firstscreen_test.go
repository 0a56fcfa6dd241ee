package render

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench"
	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/shared/publish"
)

// scaleFixture runs a small scale sweep with the simulated client (N = 1, 10, 100, both
// workloads, both caches, both protocols: about a second) and loads it as a report's
// Scale, so that the chart is drawn from a real bench.json.
func scaleFixture(t *testing.T) *compare.Scale {
	t.Helper()
	out := t.TempDir()
	_, err := bench.Run(context.Background(), benchcore.Options{
		Clusters: []int{1, 10, 100}, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes,
		SotWVersions: []publish.VersionStrategy{publish.PerType}, Caches: []publish.Cache{publish.SnapshotCache, publish.LinearCache},
		Workloads: []string{benchcore.WorkloadEndpoint, benchcore.WorkloadClusterAdd}, Repeat: 1, Out: out, Timeout: time.Minute,
	})
	require.NoError(t, err)
	s, err := compare.LoadScale(filepath.Join(out, "bench.json"))
	require.NoError(t, err)
	return s
}

// firstScreen is what a browser shows of a page at 1280 x 800: where the differences
// table and the chart end, how wide the page is, and the note links that lead nowhere.
type firstScreen struct {
	TableTop, TableBottom, ChartBottom float64
	ScrollWidth, ViewWidth             float64
	Refs, Notes                        int
	Dangling                           []string
	OpenScrollWidth                    float64
}

// measureFirstScreen opens page in headless Chromium (driven by chromedp) at 1280 x 800
// and measures it, then opens every collapsed section and measures the width again.
func measureFirstScreen(t *testing.T, bin string, page []byte) firstScreen {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	require.NoError(t, os.WriteFile(path, page, 0o644))
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.Flag("hide-scrollbars", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate("file://"+path),
		chromedp.WaitReady(chromedp.CSS("#answer")),
	))
	fs, err := chromedp.Run(ctx, chromedp.Evaluate[firstScreen](`(() => {
		const r = s => { const e = document.querySelector(s); return e ? e.getBoundingClientRect() : {top: -1, bottom: 1e9}; };
		const refs = [...document.querySelectorAll('a.ref')];
		return {
			TableTop: r('#differences').top, TableBottom: r('#differences').bottom, ChartBottom: r('#scale svg').bottom,
			ScrollWidth: document.documentElement.scrollWidth, ViewWidth: window.innerWidth,
			Refs: refs.length, Notes: document.querySelectorAll('ol.sources li').length,
			Dangling: refs.map(a => a.getAttribute('href')).filter(h => !document.getElementById(h.slice(1))),
		};
	})()`))
	require.NoError(t, err)
	fs.OpenScrollWidth, err = chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
		document.querySelectorAll('details').forEach(d => d.open = true);
		return document.documentElement.scrollWidth; })()`))
	require.NoError(t, err)
	return fs
}

// TestFirstScreenInBrowser: in a real browser at 1280 x 800, the main report (the
// matrix of the four teaching runs, with a scale sweep) and the two-run report show
// the differences table and the scale chart within the first screen, nothing overflows
// the page's width (wide tables scroll in their own box, also with every section open),
// and every note a row or finding refers to is on the page.
func TestFirstScreenInBrowser(t *testing.T) {
	bin := findChromium(t)
	scale := scaleFixture(t)
	m := loadMatrix(t, teaching4, compare.Options{Scale: scale})
	rep := report(t, sotwRun, deltaRun, compare.Options{Scale: scale})
	for name, page := range map[string][]byte{"matrix": renderMatrix(t, m, "html"), "two-run": render(t, rep, "html")} {
		fs := measureFirstScreen(t, bin, page)
		t.Logf("%s: %+v", name, fs)
		assert.GreaterOrEqual(t, fs.TableTop, 0.0, name)
		assert.LessOrEqual(t, fs.TableBottom, 800.0, "%s: the differences table ends within the first screen", name)
		assert.LessOrEqual(t, fs.ChartBottom, 800.0, "%s: the scale chart ends within the first screen", name)
		assert.Equal(t, 1280.0, fs.ViewWidth, name)
		assert.LessOrEqual(t, fs.ScrollWidth, fs.ViewWidth, "%s: nothing overflows at 1280 px", name)
		assert.LessOrEqual(t, fs.OpenScrollWidth, fs.ViewWidth, "%s: nothing overflows with every section open", name)
		assert.Greater(t, fs.Refs, len(m.ProtocolDifferences), "%s: rows and findings cite notes", name)
		assert.Greater(t, fs.Notes, 5, name)
		assert.Empty(t, fs.Dangling, "%s: every note a row or finding refers to is on the page", name)
	}
}
