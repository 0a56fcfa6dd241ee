package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

func loadReport(t *testing.T) *compare.Report {
	t.Helper()
	return report(t, loadSotwRun, loadDeltaRun, compare.Options{})
}

// stepLine is the line of a text table that starts with step.
func stepLine(t *testing.T, text, step string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), step+" ") {
			return l
		}
	}
	t.Fatalf("no %s line in:\n%s", step, text)
	return ""
}

// textFrom returns a text report from heading to the next heading (a line of capitals).
func textFrom(t *testing.T, text, heading string) string {
	t.Helper()
	i := strings.Index(text, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "no %s section", heading)
	rest := text[i+len(heading)+2:]
	if j := regexp.MustCompile(`\n\n[A-Z][A-Z ]+\n`).FindStringIndex(rest); j != nil {
		rest = rest[:j[0]]
	}
	return rest
}

// TestTrafficFigures: each step's traffic in the report is analysis's, from the fixture's
// traffic events, with only the step's publishes, ACKs and NACKs inside its timeline
// marked; the JSON format carries them.
func TestTrafficFigures(t *testing.T) {
	rep := loadReport(t)
	require.Equal(t, []string{"initial", "port-change", "invalid-route"}, rep.SharedSteps)

	pc := row(t, rep, "port-change")
	a, b := pc.Runs[0].Traffic, pc.Runs[1].Traffic
	require.NotNil(t, a)
	require.NotNil(t, b)
	assert.Equal(t, 80, a.Requests)
	assert.Equal(t, 77, a.OK)
	assert.Equal(t, map[string]int{"v1": 19, "v2": 58}, a.ByBackend)
	assert.Equal(t, map[string]int{"503 NC": 3}, a.Failures)
	assert.False(t, a.Behind)
	assert.True(t, b.Behind, "63 requests in 400 ms is 157.5/s of 200")
	assert.InDelta(t, 157.5, b.AchievedRate, 1e-9)
	require.NotNil(t, a.Move)
	assert.Equal(t, "v1", a.Move.From)
	assert.InDelta(t, 60.1, *a.Move.AllNewMS, 1e-9)
	kinds := func(tr *analysis.Traffic) []string {
		var out []string
		for _, m := range tr.Marks {
			out = append(out, fmt.Sprintf("%s %s%s @%.1f", m.Kind, m.Type, m.Version, m.AtMS))
		}
		return out
	}
	// The publish of 2.1 (665 ms) and its ACK (680 ms) come after the timeline's end (650).
	assert.Equal(t, []string{"publish 2 @70.0", "ack LDS @80.0", "ack RDS @81.0", "ack CDS @82.0", "ack EDS @83.0"}, kinds(a))
	assert.Equal(t, []string{"publish 2 @70.0", "ack EDS @80.0"}, kinds(b))
	// The initial step's publish and ACKs come before its timeline starts (50 ms).
	assert.Empty(t, row(t, rep, "initial").Runs[0].Traffic.Marks)
	ir := row(t, rep, "invalid-route")
	assert.Len(t, ir.Runs[0].Traffic.Marks, 13, "the publish and the storm's 12 NACKs")
	assert.Equal(t, 2, ir.Runs[0].Traffic.Unlogged)
	assert.Equal(t, 3, ir.Runs[1].Traffic.Overflow)
	assert.Nil(t, rep.Total[0].Traffic, "totals have no traffic")

	var out struct {
		Rows []struct {
			Step string `json:"step"`
			Runs []struct {
				Traffic *analysis.Traffic `json:"traffic"`
			} `json:"runs"`
		} `json:"rows"`
	}
	data := render(t, rep, "json")
	require.NoError(t, json.Unmarshal(data, &out))
	require.Len(t, out.Rows, 3)
	for i, r := range out.Rows {
		for j := range 2 {
			assert.Equal(t, rep.Rows[i].Runs[j].Traffic, r.Runs[j].Traffic, "%s run %d", r.Step, j)
		}
	}
	assert.Contains(t, string(data), `"behind": true`)
	assert.Contains(t, string(data), `"failures": {
              "503 NC": 3
            }`)
	assert.Contains(t, string(data), `"first_old_ms": 0.4`)
}

// TestTrafficText: the text report's traffic table has each run's counts, rates (behind
// flagged), failures, latencies, move and log check per step, and a sparkline per series
// with the marks' positions; every timeline line fits 100 columns.
func TestTrafficText(t *testing.T) {
	text := string(render(t, loadReport(t), "text"))
	tr := textFrom(t, text, "TRAFFIC")
	assert.Contains(t, tr, "requests  rate/s   ok  backends        failures   p50  p99  max   move   old-first  old-last  old-answered  all-new  old-after  backend logs")

	sides := strings.Split(stepLine(t, tr, "port-change"), " | ")
	require.Len(t, sides, 3)
	assert.Regexp(t, `^80  200/200  77  v1 ×19, v2 ×58  503 NC ×3  1\.3  8\.7  12\.5  v1→v2\s+0\.4\s+38\.2\s+-\s+60\.1\s+5  -$`, strings.TrimSpace(sides[1]))
	assert.Regexp(t, `^63  158/200 ⚠ behind  63  v1 ×17, v2 ×46  -\s+1\.1  4\.2  6\.0  v1→v2\s+0\.3\s+24\.9\s+-\s+25\.5\s+2  -$`, strings.TrimSpace(sides[2]))
	sides = strings.Split(stepLine(t, tr, "invalid-route"), " | ")
	assert.True(t, strings.HasSuffix(strings.TrimSpace(sides[1]), "2 unlogged, 1 misattributed"), sides[1])
	assert.Contains(t, sides[2], "63 (3 overflow)")
	assert.Contains(t, tr, "⚠ behind when under 90% of asked")
	assert.Contains(t, tr, "unlogged (no line with the request's ID)", "the log check is explained when a run has one")

	for _, want := range []string{
		"    A: sotw (uniform, nack resend, envoy): 400 ms from 10:00:00.250 in 20 ms buckets\n" +
			"      v1     4 ████▄▂·············· 0 max 4\n" +
			"      v2     0 ····▂▄▆█████████████ 4 max 4\n" +
			"      503 NC 0 ····███············· 0 max 1\n" +
			"      marks       PA\n" +
			"      P publish v2 @70.0 ms; A ACK LDS @80.0 ms; A ACK RDS @81.0 ms; A ACK CDS @82.0 ms; A ACK EDS\n" +
			"        @83.0 ms\n",
		"    B: delta (envoy): 400 ms from 10:00:00.250 in 20 ms buckets\n" +
			"      v1    4 █▆█▆▄▂·············· 0 max 4\n" +
			"      v2    0 ····▂▄█▆▆▆▆▆▆▆▆▆▆▆▆▆ 3 max 4\n" +
			"      marks      PA\n" +
			"      P publish v2 @70.0 ms; A ACK EDS @80.0 ms\n",
		// The publish and the first NACK share a character; the storm's 12 NACKs are one entry.
		"      marks      *NNN\n      P publish v3 @60.0 ms; N NACK RDS ×12 @65.0-120.0 ms\n",
		"  initial\n    A: sotw (uniform, nack resend, envoy): 200 ms from 10:00:00.050 in 20 ms buckets\n      v1    4 ██████████ 4 max 4\n    B:",
	} {
		assert.Contains(t, tr, want)
	}
	assert.NotContains(t, tr, "2.1", "the publish after the timeline is not marked")
	timelines := tr[strings.Index(tr, "\n  initial\n"):]
	for _, l := range strings.Split(timelines, "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), 100, l)
	}
	// The sections around it are as they were.
	assert.Contains(t, text, "\nDATA PLANE\n")
	assert.Less(t, strings.Index(text, "\nDATA PLANE\n"), strings.Index(text, "\nTRAFFIC\n"))
	assert.Less(t, strings.Index(text, "\nTRAFFIC\n"), strings.Index(text, "\nVERSIONS\n"))
}

// TestTrafficMarkdown: the Markdown report has the same table and the sparklines in a
// code block per step.
func TestTrafficMarkdown(t *testing.T) {
	md := string(render(t, loadReport(t), "markdown"))
	sec := md[strings.Index(md, "\n## Traffic\n"):strings.Index(md, "\n## Versions\n")]
	assert.Contains(t, sec, "| port-change | 80 | 200/200 | 77 | v1 ×19, v2 ×58 | 503 NC ×3 | 1.3 | 8.7 | 12.5 | v1→v2 | 0.4 | 38.2 | - | 60.1 | 5 | - | 63 | 158/200 ⚠ behind | 63 | v1 ×17, v2 ×46 | - | 1.1 | 4.2 | 6.0 | v1→v2 | 0.3 | 24.9 | - | 25.5 | 2 | - |")
	assert.Contains(t, sec, "| invalid-route | 60 | 200/200 | 60 | v2 ×60 | - | 1.2 | 3.9 | 7.7 | - | - | - | - | - | - | 2 unlogged, 1 misattributed | 63 (3 overflow) |")
	assert.Contains(t, sec, "#### port-change\n\n```text\nA: sotw (uniform, nack resend, envoy): 400 ms from 10:00:00.250 in 20 ms buckets\n  v1     4 ████▄▂·············· 0 max 4\n")
	assert.Contains(t, sec, "  marks      *NNN\n  P publish v3 @60.0 ms; N NACK RDS ×12 @65.0-120.0 ms\nB: delta (envoy)")
	assert.Equal(t, 3*2, strings.Count(sec, "```"), "a code block per step")
}

// timelineSVG is one drawn timeline of an HTML report.
type timelineSVG struct {
	Caption, SVG string
}

// timelineSVGs returns the HTML report's traffic timelines in order (steps, then runs);
// a run without a drawing has an empty SVG.
func timelineSVGs(t *testing.T, html string) []timelineSVG {
	t.Helper()
	i, j := strings.Index(html, `<section id="traffic">`), strings.Index(html, `<section id="versions">`)
	require.True(t, i >= 0 && j > i, "no traffic section")
	var out []timelineSVG
	for _, fig := range strings.Split(html[i:j], "<figure>")[1:] {
		fig = fig[:strings.Index(fig, "</figure>")]
		c := timelineSVG{Caption: fig[len("<figcaption>"):strings.Index(fig, "</figcaption>")]}
		if k := strings.Index(fig, `<svg class="timeline"`); k >= 0 {
			c.SVG = fig[k : strings.Index(fig, "</svg>")+len("</svg>")]
		}
		out = append(out, c)
	}
	return out
}

// TestTrafficSVG: the HTML report draws a timeline per step and run: a path per series in
// its colour (the same backend's the same everywhere, failures red), a mark per publish,
// ACK and NACK inside the timeline and none outside it, labels up to ten marks and thin
// ticks past them, an accessible title, an axis in ms and a legend.
func TestTrafficSVG(t *testing.T) {
	html := string(render(t, loadReport(t), "html"))
	assert.Contains(t, html, "svg.timeline .mark-nack line", "the report with traffic has its style")
	svgs := timelineSVGs(t, html)
	require.Len(t, svgs, 6, "3 steps × 2 runs")
	want := []struct {
		series, marks, labels, thin int
	}{
		{1, 0, 0, 0}, {1, 0, 0, 0}, // initial: its events precede the timeline
		{3, 5, 4, 0}, {2, 2, 2, 0}, // port-change: the fifth label finds no room, keeps its tooltip
		{1, 13, 0, 13}, {1, 2, 2, 0}, // invalid-route: the storm is thin ticks
	}
	label := regexp.MustCompile(`<g class="mark mark-[a-z]+"><title>[^<]*</title><line [^>]*></line><text `)
	colour := regexp.MustCompile(`<path class="series" data-series="([^"]*)" fill="(#[0-9a-f]{6})"`)
	colours := map[string]string{}
	for i, s := range svgs {
		w := want[i]
		require.NotEmpty(t, s.SVG, "timeline %d", i)
		assert.Equal(t, w.series, strings.Count(s.SVG, `<path class="series"`), "timeline %d: paths", i)
		assert.Equal(t, w.marks, strings.Count(s.SVG, `<g class="mark `), "timeline %d: marks", i)
		assert.Equal(t, w.labels, len(label.FindAllString(s.SVG, -1)), "timeline %d: labels", i)
		assert.Equal(t, w.thin, strings.Count(s.SVG, ` thin">`), "timeline %d: thin ticks", i)
		assert.Regexp(t, `^<svg class="timeline" viewBox="0 0 560 \d+" width="560" height="\d+" role="img" aria-label="[^"]+"><title>[^<]+</title>`, s.SVG, "an accessible name first")
		assert.Contains(t, s.SVG, `<text class="tl-axis" x="48.0" y="166" text-anchor="middle">0</text>`, "the x axis starts at 0 ms")
		assert.Contains(t, s.SVG, "; bars: requests per 20 ms</text>")
		assert.Equal(t, w.series, strings.Count(s.SVG, `<g class="legend"><rect`), "timeline %d: a legend swatch per series", i)
		for _, m := range colour.FindAllStringSubmatch(s.SVG, -1) {
			if c, ok := colours[m[1]]; ok {
				assert.Equal(t, c, m[2], "%s has one colour", m[1])
			}
			colours[m[1]] = m[2]
			assert.Contains(t, s.SVG, fmt.Sprintf(`fill="%s"></rect><text x="`, m[2]), "the legend shows %s's colour", m[1])
		}
	}
	assert.Equal(t, map[string]string{"v1": backendColours[0], "v2": backendColours[1], "503 NC": failureColours[0]}, colours)

	pc := svgs[2]
	assert.Equal(t, "A: sotw (uniform, nack resend, envoy)", pc.Caption)
	assert.Contains(t, pc.SVG, `aria-label="port-change, A: sotw (uniform, nack resend, envoy): requests per 20 ms bucket over 400 ms from 10:00:00.250; v1 19, v2 58, 503 NC 3; marked: publish v2 @70.0 ms; ACK LDS @80.0 ms;`)
	// 70 ms of 400 on a 500-unit axis from x 48 is x 135.5.
	assert.Contains(t, pc.SVG, `<g class="mark mark-publish"><title>publish v2 at 70.0 ms</title><line x1="135.5" y1="2" x2="135.5" y2="154"></line><text x="137.5" y="8">publish v2</text></g>`)
	assert.Contains(t, pc.SVG, `<title>ACK EDS at 83.0 ms</title>`)
	assert.NotContains(t, pc.SVG, "2.1", "the publish after the timeline's end is not drawn")
	assert.Contains(t, pc.SVG, `<path class="series" data-series="503 NC" fill="#cf222e" d="M148.0 44.0h25.0v27.5h-25.0ZM173.0 44.0h25.0v27.5h-25.0ZM198.0 44.0h25.0v27.5h-25.0Z"><title>503 NC: 3 requests</title></path>`,
		"one failure in each of buckets 4 to 6, stacked on the backends (a quarter of the height)")
	assert.Contains(t, pc.SVG, `<g class="legend mark mark-publish">`)
	assert.Contains(t, pc.SVG, `<g class="legend mark mark-ack">`)
	assert.NotContains(t, pc.SVG, `<g class="legend mark mark-nack">`, "the legend names only the kinds drawn")
	assert.Contains(t, svgs[5].SVG, `>NACK RDS</text></g>`)
	assert.Contains(t, svgs[4].SVG, `<title>NACK RDS at 120.0 ms</title>`, "a thin tick keeps its tooltip")
}

// TestTrafficEscapes: names from the log are escaped in every format: HTML special
// characters in a backend's name never become markup.
func TestTrafficEscapes(t *testing.T) {
	name := `<b>v2&"x"</b>`
	a, err := compare.FromLog("A", loadFixture(t, protocol.SotW, name))
	require.NoError(t, err)
	b, err := compare.FromLog("B", loadFixture(t, protocol.Delta, name))
	require.NoError(t, err)
	rep, err := compare.Compare(a, b, compare.Options{})
	require.NoError(t, err)

	html := string(render(t, rep, "html"))
	sec := html[strings.Index(html, `<section id="traffic">`):strings.Index(html, `<section id="versions">`)]
	assert.NotContains(t, sec, "<b>")
	assert.Contains(t, sec, `data-series="&lt;b&gt;v2&amp;&#34;x&#34;&lt;/b&gt;"`)
	assert.Contains(t, sec, `<title>&lt;b&gt;v2&amp;&#34;x&#34;&lt;/b&gt;: 58 requests</title>`)
	assert.Contains(t, sec, `<td class="dp">&lt;b&gt;v2&amp;&#34;x&#34;&lt;/b&gt; ×58, v1 ×19</td>`)
	assert.Contains(t, sec, `v1→&lt;b&gt;v2&amp;&#34;x&#34;&lt;/b&gt;`)

	md := string(render(t, rep, "markdown"))
	msec := md[strings.Index(md, "\n## Traffic\n"):strings.Index(md, "\n## Versions\n")]
	assert.Contains(t, msec, `| &lt;b&gt;v2&"x"&lt;/b&gt; ×58, v1 ×19 |`)
	assert.Contains(t, msec, "  <b>v2&\"x\"... 0 ····▂▄▆", "literal inside the code block, cut to 12 characters")

	text := string(render(t, rep, "text"))
	assert.Contains(t, text, `<b>v2&"x"</b> ×58, v1 ×19`)
}

// TestCodeBlockFence: a code block's fence is longer than any run of backticks inside.
func TestCodeBlockFence(t *testing.T) {
	var b strings.Builder
	writeCodeBlock(&b, []string{"a ``` b", "`"})
	assert.Equal(t, "````text\na ``` b\n`\n````\n", b.String())
}

// TestTrafficWithoutEvents: runs without a traffic event have no traffic section in any
// format (the golden files, TestGolden, are byte for byte what they were).
func TestTrafficWithoutEvents(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	for _, r := range rep.Rows {
		assert.Nil(t, r.Runs[0].Traffic, r.Step)
	}
	assert.NotContains(t, string(render(t, rep, "text")), "TRAFFIC")
	assert.NotContains(t, string(render(t, rep, "markdown")), "## Traffic")
	assert.NotContains(t, string(render(t, rep, "json")), `"traffic"`)
	html := string(render(t, rep, "html"))
	assert.NotContains(t, html, `id="traffic"`)
	assert.NotContains(t, html, "svg.timeline")
}

// TestTrafficMatrix: a matrix has a column group per run in the traffic table and a
// timeline per run and step; a run without traffic says so.
func TestTrafficMatrix(t *testing.T) {
	ra, rb := loadPair(t, loadSotwRun, loadDeltaRun)
	rc, err := compare.Load("C", sotwRun)
	require.NoError(t, err)
	m, err := compare.CompareMatrix([]*compare.Run{ra, rb, rc}, compare.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"initial", "port-change", "invalid-route"}, m.SharedSteps)

	text := string(renderMatrix(t, m, "text"))
	tr := textFrom(t, text, "TRAFFIC")
	sides := strings.Split(stepLine(t, tr, "port-change"), " | ")
	require.Len(t, sides, 4, "a group per run")
	assert.Contains(t, sides[2], "158/200 ⚠ behind")
	assert.Regexp(t, `^[-\s]+$`, sides[3], "run C has no traffic")
	assert.Contains(t, tr, "    C: sotw · snapshot · simulated: no traffic event in this step\n")

	html := string(renderMatrix(t, m, "html"))
	svgs := timelineSVGs(t, html)
	require.Len(t, svgs, 9)
	assert.NotEmpty(t, svgs[3].SVG)
	assert.Empty(t, svgs[5].SVG, "C's port-change has no drawing")
	assert.Contains(t, html, `<div class="runs-grid">`+"\n<figure><figcaption>A: ")
	assert.Contains(t, html, "<p class=\"note\">No traffic event in this step.</p>")

	md := string(renderMatrix(t, m, "markdown"))
	assert.Contains(t, md, "\n## Traffic\n")
	var js struct {
		Rows []struct {
			Runs []struct {
				Traffic *analysis.Traffic `json:"traffic"`
			} `json:"runs"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal(renderMatrix(t, m, "json"), &js))
	assert.Equal(t, 80, js.Rows[1].Runs[0].Traffic.Requests)
	assert.Nil(t, js.Rows[1].Runs[2].Traffic)
}

// TestTrafficOddTimelines: a traffic event with a timeline that cannot be drawn as logged
// renders in every format, the report saying what was wrong, and never panics.
func TestTrafficOddTimelines(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		tl   *xdslog.Timeline
		move *xdslog.TrafficMove
		// text is in the text report's timeline; svgs counts its series paths (-1: no drawing).
		text  string
		paths int
	}{
		{"no timeline", nil, nil, "A: sotw: no timeline (none recorded)", -1},
		{"negative bucket", &xdslog.Timeline{Start: start, BucketMS: -5, Series: map[string][]int{"v1": {1}}}, nil,
			"A: sotw: no timeline (not drawn: bucket_ms -5 is not between 0 and 3600000)", -1},
		{"no series", &xdslog.Timeline{Start: start, BucketMS: 20}, nil, "no timeline (not drawn: the timeline has no bucket)", -1},
		{"unequal", &xdslog.Timeline{Start: start, BucketMS: 20, Series: map[string][]int{"v1": {3}, "503": {1, 2, 3, 4}}},
			&xdslog.TrafficMove{From: "v1", To: "v2"},
			"(timeline: series of unequal length, padded with zeros to 4 buckets)\n      v1    3 █··· 0 max 3\n      503   1 ▂▄▆█ 4 max 4", 2},
		{"no start", &xdslog.Timeline{BucketMS: 20, Series: map[string][]int{"v1": {1, 2}}}, nil,
			"A: sotw: 40 ms in 20 ms buckets\n      (timeline: no start time: nothing marked on it)\n      v1    1 ▄█ 2 max 2", 1},
		{"long", &xdslog.Timeline{Start: start, BucketMS: 5, Series: map[string][]int{"v1": repeatCount(1, 5000)}}, nil,
			"A: sotw: 5000 ms from 10:00:00.000 in 5 ms buckets, 17 per character\n      (timeline: 5000 buckets, the first 1000 kept)\n      v1    17 ███", 1},
		{"tiny buckets", &xdslog.Timeline{Start: start, BucketMS: 1e-300, Series: map[string][]int{"v1": {1, 0}}}, nil,
			"A: sotw: 2e-300 ms from 10:00:00.000 in 1e-300 ms buckets", 1},
		{"zeros", &xdslog.Timeline{Start: start, BucketMS: 10, Series: map[string][]int{"v1": {0, 0}}}, nil, "      v1    0 ·· 0 max 0", 1},
	}
	many := map[string][]int{}
	for i := range 30 {
		many[fmt.Sprintf("backend-%02d", i)] = []int{i, 1}
	}
	cases = append(cases, struct {
		name  string
		tl    *xdslog.Timeline
		move  *xdslog.TrafficMove
		text  string
		paths int
	}{"many series", &xdslog.Timeline{Start: start, BucketMS: 10, Series: many}, nil, `30 series, the smallest folded into "other"`, 16})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := xdslog.Traffic{Requests: 4, OK: 4, ByBackend: map[string]int{"v1": 4}, AskedRate: 200, AchievedRate: 200, Timeline: c.tl, Move: c.move}
			lines := []xdslog.Event{
				{TS: start, Event: xdslog.EventStep, Mode: protocol.SotW, Step: "s"},
				{TS: start.Add(time.Millisecond), Event: xdslog.EventPublish, Mode: protocol.SotW, Step: "s", Version: "2"},
				{TS: start.Add(time.Second), Event: xdslog.EventTraffic, Mode: protocol.SotW, Step: "s", Traffic: &tr},
			}
			var log bytes.Buffer
			for _, e := range lines {
				b, err := json.Marshal(e)
				require.NoError(t, err)
				log.Write(append(b, '\n'))
			}
			r, err := compare.FromLog("A", log.Bytes())
			require.NoError(t, err)
			rep, err := compare.Compare(r, r, compare.Options{})
			require.NoError(t, err)
			for _, format := range Formats {
				require.NotEmpty(t, render(t, rep, format), format)
			}
			m, err := compare.CompareMatrix([]*compare.Run{r, r}, compare.Options{})
			require.NoError(t, err)
			for _, format := range Formats {
				require.NotEmpty(t, renderMatrix(t, m, format), format)
			}
			text := string(render(t, rep, "text"))
			assert.Contains(t, text, c.text)
			if c.move != nil {
				assert.Contains(t, stepLine(t, textFrom(t, text, "TRAFFIC"), "s"), "v1→v2          -         -             -    never          0")
			}
			svgs := timelineSVGs(t, string(render(t, rep, "html")))
			require.Len(t, svgs, 2)
			if c.paths < 0 {
				assert.Empty(t, svgs[0].SVG)
				return
			}
			assert.Equal(t, c.paths, strings.Count(svgs[0].SVG, `<path class="series"`))
			assert.NotContains(t, svgs[0].SVG, "NaN")
			assert.NotContains(t, svgs[0].SVG, "Inf")
		})
	}
}

// TestTrafficMarksLeftOut: publishes, ACKs and NACKs that analysis did not keep are
// counted under the timeline in every format that draws it.
func TestTrafficMarksLeftOut(t *testing.T) {
	tr := &analysis.Traffic{MarksLeftOut: 2500,
		Marks:   []analysis.TrafficMark{{Kind: xdslog.EventNack, Type: "RDS", AtMS: 5}},
		Traffic: xdslog.Traffic{Timeline: &xdslog.Timeline{Start: fixtureStart, BucketMS: 10, Series: map[string][]int{"v1": {1, 1}}}},
	}
	lines := textTimeline("A: sotw", tr, 94)
	assert.Equal(t, []string{
		"A: sotw: 20 ms from 10:00:00.000 in 10 ms buckets",
		"  v1    1 ██ 1 max 1",
		"  marks   N",
		"  N NACK RDS @5.0 ms",
		"  (2500 more of the step's publishes, ACKs and NACKs not marked: too many to keep)",
	}, lines)
	svg := layoutTimeline("s", "A: sotw", tr, map[string]string{})
	assert.Equal(t, "2500 more of the step's publishes, ACKs and NACKs not marked: too many to keep.", svg.Problem)
}
