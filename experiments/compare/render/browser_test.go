package render

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/testenv"
)

// findChromium returns the Chromium binary on PATH. With CI=true a missing browser fails
// the test (CI installs it, see .ci/run); elsewhere the test is skipped.
func findChromium(t *testing.T) string {
	t.Helper()
	testenv.SkipIfShort(t, testenv.NeedsBrowser)
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "no Chromium", errors.New("not on PATH (chromium or chromium-browser)"),
		"Chromium not found on PATH (chromium or chromium-browser): run `make chromium` as root, or apt-get install -y chromium")
	return ""
}

// TestHTMLInBrowser opens the HTML report from a file in headless Chromium: the
// screenshot decodes as a PNG that is not one flat colour, and the DOM Chromium built
// names every compared step.
func TestHTMLInBrowser(t *testing.T) {
	bin := findChromium(t)
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	dom := renderedDOM(t, bin, render(t, rep, "html"))
	require.Contains(t, dom, "lab compare: A sotw vs B delta")
	for _, s := range rep.SharedSteps {
		assert.Contains(t, dom, "<h3>"+s+"</h3>", "the rendered DOM has the diagrams of step %s", s)
		assert.Contains(t, dom, ">"+s+"</td>", "the rendered DOM has the table row of step %s", s)
	}
	assert.Equal(t, 2*len(rep.SharedSteps), strings.Count(dom, "<svg viewBox="), "every diagram survived parsing")
	assert.Equal(t, 2*len(rep.SharedSteps), strings.Count(dom, `<svg class="bar"`), "every error-window bar survived parsing")
	assert.Contains(t, dom, `id="headline">`+rep.Headline.Text[:40], "the report opens with its headline")
	assert.Contains(t, dom, "<code>inventory</code>", "code spans in findings are code elements")
	assert.Equal(t, len(rep.Findings), strings.Count(dom, `<span class="attr attr-`), "every finding shows its attribution")
}

// TestMatrixHTMLInBrowser opens the 4-run matrix (SotW and delta with each cache) in
// headless Chromium the same way: it renders, and the DOM Chromium built has a column
// group per run in both tables, a row per step, a diagram per run and step, and every
// finding with its label, among them a protocol and an implementation one.
func TestMatrixHTMLInBrowser(t *testing.T) {
	bin := findChromium(t)
	m := loadMatrix(t, teaching4, compare.Options{})
	dom := renderedDOM(t, bin, renderMatrix(t, m, "html"))
	require.Contains(t, dom, "<h1>lab compare: SotW vs delta over 4 runs</h1>")
	require.Contains(t, dom, "The runs: A sotw · snapshot · uniform · nack resend; B delta · snapshot; C sotw · linear · per-type · nack hold; D delta · linear.")
	for _, r := range m.Runs {
		title := r.Label + ": " + r.Axes
		assert.Contains(t, dom, `<th class="group" colspan="12">`+title+`</th>`, "the step table has a column group for %s", title)
		assert.Contains(t, dom, `<th class="group" colspan="5">`+title+`</th>`, "the version table has a column group for %s", title)
		assert.Contains(t, dom, "<figcaption>"+title+"</figcaption>", "diagrams are captioned by run")
	}
	steps := dom[strings.Index(dom, `<section id="steps">`):strings.Index(dom, `<section id="dataplane">`)]
	for _, s := range m.SharedSteps {
		assert.Contains(t, steps, "<td>"+s+"</td>", "the matrix has a row for %s", s)
		assert.Contains(t, dom, "<h3>"+s+"</h3>")
	}
	assert.Equal(t, len(m.SharedSteps)+1, strings.Count(steps, "<tr><td>"), "a row per step and the total")
	assert.Equal(t, 4*len(m.SharedSteps), strings.Count(dom, "<svg viewBox="), "a diagram per run and step")
	assert.Equal(t, 4*len(m.SharedSteps), strings.Count(dom, `<svg class="bar"`), "an error-window bar per run and step")

	findings := dom[strings.Index(dom, `<section id="findings">`):strings.Index(dom, `<section id="notes">`)]
	assert.Equal(t, len(m.Findings), strings.Count(findings, `<li class="finding"`))
	assert.Equal(t, len(m.Findings), strings.Count(findings, `<span class="attr attr-`), "every finding shows its label")
	rm := matrixFinding(t, m, "remove-cluster", "removal", "")
	assert.Contains(t, findings, `<li class="finding" data-step="remove-cluster" data-kind="removal">`)
	assert.Contains(t, findings, `<span class="attr attr-protocol">protocol</span>`+rm.Basis)
	pc := matrixFinding(t, m, "port-change", "redundant", "LDS")
	assert.Contains(t, findings, `<li class="finding" data-step="port-change" data-kind="redundant" data-types="LDS,RDS,CDS">`)
	assert.Contains(t, findings, `<span class="attr attr-implementation">implementation</span>`+pc.Basis)
	assert.Contains(t, dom[strings.Index(dom, `<section id="sources">`):], "pkg/cache/v3/linear.go", "the sources are notes")
	assert.Equal(t, 2*len(m.Findings), strings.Count(findings, "<li>"), "every finding lists both pairs' own findings")
}

// browser writes page to a file and returns a function that runs headless Chromium on it
// with extra arguments and returns its standard output.
func browser(t *testing.T, bin string, page []byte) func(args ...string) []byte {
	t.Helper()
	run := browserWithLog(t, bin, page)
	return func(args ...string) []byte {
		stdout, _ := run(args...)
		return stdout
	}
}

// browserWithLog is browser, the function returning Chromium's standard error too.
func browserWithLog(t *testing.T, bin string, page []byte) func(args ...string) (stdout, stderr []byte) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "compare.html")
	require.NoError(t, os.WriteFile(path, page, 0o644))
	url := "file://" + filepath.ToSlash(path)
	return func(args ...string) ([]byte, []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		// A profile per invocation: concurrent test runs must not share Chromium's lock.
		profile, err := os.MkdirTemp(dir, "profile-")
		require.NoError(t, err)
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
			"--no-first-run", "--user-data-dir=" + profile}
		cmd := exec.CommandContext(ctx, bin, append(append(base, args...), url)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "chromium %v: %s", args, lastLines(stderr.String(), 5))
		return stdout.Bytes(), stderr.Bytes()
	}
}

// TestTrafficHTMLInBrowser opens the report of the load fixtures in headless Chromium: it
// renders, the page logs nothing to its console (Chromium reports an SVG attribute it
// cannot parse there), and the DOM has every traffic timeline with its series and marks.
func TestTrafficHTMLInBrowser(t *testing.T) {
	bin := findChromium(t)
	rep := report(t, loadSotwRun, loadDeltaRun, compare.Options{})
	run := browserWithLog(t, bin, render(t, rep, "html"))

	assertRendered(t, func(args ...string) []byte { out, _ := run(args...); return out })

	dom, log := run("--enable-logging=stderr", "--v=0", "--dump-dom")
	for _, l := range strings.Split(string(log), "\n") {
		assert.NotContains(t, l, ":CONSOLE", "the page logged to its console")
	}
	d := string(dom)
	require.Contains(t, d, `<section id="traffic">`)
	assert.Equal(t, 6, strings.Count(d, `<svg class="timeline"`), "a timeline per step and run")
	assert.Equal(t, 1+1+3+2+1+1, strings.Count(d, `<path class="series"`), "a path per series")
	assert.Equal(t, 5+2+13+2, strings.Count(d, `<g class="mark `), "a mark per publish, ACK and NACK inside the timelines")
	assert.Equal(t, 2*len(rep.SharedSteps), strings.Count(d, "<svg viewBox="), "the diagrams are all there too")
}

// renderedDOM opens page in headless Chromium, requires it rendered (assertRendered),
// and returns the DOM Chromium built.
func renderedDOM(t *testing.T, bin string, page []byte) string {
	t.Helper()
	run := browser(t, bin, page)
	assertRendered(t, run)
	return string(run("--dump-dom"))
}

// assertRendered takes a screenshot with run: it decodes as a PNG that is not one flat
// colour.
func assertRendered(t *testing.T, run func(args ...string) []byte) {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	run("--screenshot="+shot, "--window-size=1280,4000", "--hide-scrollbars")
	data, err := os.ReadFile(shot)
	require.NoError(t, err, "Chromium wrote no screenshot")
	require.NotEmpty(t, data)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	b := img.Bounds()
	assert.Equal(t, 1280, b.Dx())
	colours := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y && len(colours) < 16; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	assert.Greater(t, len(colours), 8, "the screenshot is (nearly) one flat colour: nothing rendered")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
