package render

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// A traffic timeline is a step's requests per bucket (by when they were sent), one series
// per answer: a backend, or a failure key. Text and Markdown draw each series as a
// sparkline, HTML as stacked bars in an SVG; both mark the step's publishes, ACKs and
// NACKs that fall inside the timeline's span (analysis.Traffic.Marks).

const timelineLegend = "requests per bucket by when they were sent, a line per answer (a backend, " +
	"or a failure key), ▁▂▃▄▅▆▇█ scaled to the line's max, · none; the counts at its ends are the first and " +
	"the last character's; marks: P publish, A ACK, N NACK, * more than one kind, at their ms from the " +
	"timeline's start (the step's publishes, ACKs and NACKs inside the timeline), listed below it"

var svgTimelineLegend = "each step's requests over time, by when they were sent: stacked bars per bucket, " +
	"a colour per backend (the same in every step and run) and a red one per failure key; the x axis is in ms " +
	"from the timeline's start (where the previous step's count ended); vertical lines mark the step's " +
	"publishes, ACKs and NACKs inside the timeline, labelled up to " + fmt.Sprint(maxLabelledMarks) +
	" (more are drawn as thin ticks: hover for each)"

// maxSparkWidth is how many characters a sparkline has at most: longer timelines add up
// neighbouring buckets, so that a line stays within 100 columns.
const maxSparkWidth = 60

// maxLabelledMarks is how many marks a drawing labels; past it (an ACK or NACK storm)
// every mark is a thin tick with only a tooltip.
const maxLabelledMarks = 10

// maxMarkGroups is how many distinct marks ("ACK EDS ×4") a text timeline lists.
const maxMarkGroups = 10

var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// markLabel names a mark: "publish v2", "ACK EDS", "NACK RDS", a storm summary's
// "NACK RDS ×30 (condensed)".
func markLabel(m analysis.TrafficMark) string {
	switch m.Kind {
	case xdslog.EventPublish:
		return words.Sanitize("publish v" + words.Clip(m.Version, 20))
	case xdslog.EventAck:
		return words.Sanitize("ACK " + words.Clip(m.Type, 20))
	}
	s := words.Sanitize("NACK " + words.Clip(m.Type, 20))
	if m.NACKs > 1 {
		s += fmt.Sprintf(" ×%d (condensed)", m.NACKs)
	}
	return s
}

// markLetter is a mark's letter on a text timeline.
func markLetter(kind string) rune {
	switch kind {
	case xdslog.EventPublish:
		return 'P'
	case xdslog.EventAck:
		return 'A'
	}
	return 'N'
}

// textTimeline is one run's timeline of a step as text lines: a header, a sparkline per
// series, the marks' positions and their list, wrapped at marksWidth.
func textTimeline(title string, t *analysis.Traffic, marksWidth int) []string {
	switch {
	case t == nil:
		return []string{title + ": no traffic event in this step"}
	case t.Timeline == nil:
		return []string{title + ": no timeline (" + problemText(t) + ")"}
	}
	tl := t.Timeline
	n := t.Buckets()
	per := (n + maxSparkWidth - 1) / maxSparkWidth
	width := (n + per - 1) / per
	head := fmt.Sprintf("%s: %g ms%s in %g ms buckets", title, t.SpanMS(), startText(tl), tl.BucketMS)
	if per > 1 {
		head += fmt.Sprintf(", %d per character", per)
	}
	out := []string{head}
	if t.TimelineProblem != "" {
		out = append(out, "  (timeline: "+words.Sanitize(t.TimelineProblem)+")")
	}
	series := t.TimelineSeries()
	keyW, countW := len("marks"), 1
	sums := make([][]int, len(series))
	for i, s := range series {
		keyW = max(keyW, utf8.RuneCountInString(seriesKey(s.Key)))
		sums[i] = make([]int, width)
		for j, v := range s.Counts {
			sums[i][j/per] += v
		}
		countW = max(countW, len(fmt.Sprint(sums[i][0])), len(fmt.Sprint(sums[i][width-1])))
	}
	for i, s := range series {
		c := sums[i]
		out = append(out, fmt.Sprintf("  %-*s %*d %s %-*d max %d", keyW, seriesKey(s.Key), countW, c[0], sparkline(c), countW, c[width-1], slices.Max(c)))
	}
	if len(t.Marks) > 0 {
		at := make([]rune, width)
		for i := range at {
			at[i] = ' '
		}
		for _, m := range t.Marks {
			col := min(max(int(m.AtMS/(tl.BucketMS*float64(per))), 0), width-1)
			switch l := markLetter(m.Kind); at[col] {
			case ' ', l:
				at[col] = l
			default:
				at[col] = '*'
			}
		}
		out = append(out, strings.TrimRight(fmt.Sprintf("  %-*s %*s %s", keyW, "marks", countW, "", string(at)), " "))
		out = append(out, strings.Split(strings.TrimSuffix(wrap(markList(t.Marks, true), marksWidth, "  ", "    "), "\n"), "\n")...)
	}
	if t.MarksLeftOut > 0 {
		out = append(out, "  ("+marksLeftOutText(t)+")")
	}
	return out
}

// marksLeftOutText says how many of the step's publishes, ACKs and NACKs analysis did not
// place on the timeline.
func marksLeftOutText(t *analysis.Traffic) string {
	return fmt.Sprintf("%d more of the step's publishes, ACKs and NACKs not marked: too many to keep", t.MarksLeftOut)
}

// seriesKey is a series' name as the timeline shows it: one line, at most 12 characters.
func seriesKey(k string) string {
	k = words.Sanitize(k)
	if utf8.RuneCountInString(k) > 12 {
		return words.Clip(k, 9)
	}
	return k
}

// sparkline draws counts scaled to their max: a block per non-zero count, · for none.
func sparkline(counts []int) string {
	top := slices.Max(counts)
	var b strings.Builder
	for _, v := range counts {
		if v <= 0 || top <= 0 {
			b.WriteRune('·')
			continue
		}
		i := int(math.Ceil(float64(v)*float64(len(sparkLevels))/float64(top))) - 1
		b.WriteRune(sparkLevels[min(max(i, 0), len(sparkLevels)-1)])
	}
	return b.String()
}

// markList lists the marks by label, in the order they first happen: "P publish v2 @70.0
// ms; A ACK EDS ×4 @80.0-82.5 ms" (letters: with the text timeline's letter), at most
// maxMarkGroups labels.
func markList(marks []analysis.TrafficMark, letters bool) string {
	type group struct {
		letter      rune
		label       string
		n           int
		first, last float64
	}
	var groups []*group
	byLabel := map[string]*group{}
	for _, m := range marks {
		l := markLabel(m)
		g, ok := byLabel[l]
		if !ok {
			g = &group{letter: markLetter(m.Kind), label: l, first: m.AtMS}
			byLabel[l] = g
			groups = append(groups, g)
		}
		g.n++
		g.last = m.AtMS
	}
	var parts []string
	for i, g := range groups {
		if i == maxMarkGroups {
			parts = append(parts, fmt.Sprintf("+%d more", len(groups)-i))
			break
		}
		p := fmt.Sprintf("%s @%s ms", g.label, fmtMS(g.first))
		if g.n > 1 {
			p = fmt.Sprintf("%s ×%d @%s-%s ms", g.label, g.n, fmtMS(g.first), fmtMS(g.last))
		}
		if letters {
			p = string(g.letter) + " " + p
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

func fmtMS(v float64) string { return fmt.Sprintf("%.1f", v) }

// startText is " from 10:00:00.250" (UTC), or "" for a timeline without a start.
func startText(tl *xdslog.Timeline) string {
	if tl.Start.IsZero() {
		return ""
	}
	return " from " + tl.Start.UTC().Format("15:04:05.000")
}

func problemText(t *analysis.Traffic) string {
	if t.TimelineProblem == "" {
		return "none recorded"
	}
	return words.Sanitize(t.TimelineProblem)
}

// ---- SVG ----

// svgTimeline is one run's timeline of one step laid out for the "timeline" template.
// Note replaces the drawing when there is none.
type svgTimeline struct {
	Caption string
	// Title is the drawing's accessible name (its <title> and aria-label).
	Title         string
	Note, Problem string
	Width, Height int
	PlotX, PlotY  int
	PlotW, PlotH  int
	PlotBottom    int
	TickBottom    int
	Series        []svgSeries
	XTicks        []svgTick
	YTop, YZero   svgTick
	Axis          svgTick
	Marks         []svgMark
	Legend        []svgLegendItem
}

// svgSeries is one series' stacked bars: one path of a rectangle per non-empty bucket.
type svgSeries struct {
	Key, Colour, Path, Title string
}

type svgTick struct {
	X, Y  string
	Label string
}

// svgMark is a publish, ACK or NACK: a vertical line, labelled when the drawing has few
// marks (Thin when it has many).
type svgMark struct {
	Kind, Title           string
	X, Y1, Y2             string
	Label, LabelX, LabelY string
	LabelEnd, Thin        bool
}

// svgLegendItem is a series' swatch (Colour set) or a mark kind's line sample (Kind set),
// with its text.
type svgLegendItem struct {
	Colour, Kind, Text string
	X, Y, TextX, TextY int
	LineX, LineY2      int
}

// Layout of a timeline drawing, in SVG user units.
const (
	tlWidth   = 560
	tlPlotX   = 48
	tlPlotTop = tlLabelRows*tlLabelRowH + 4 // rows of mark labels above the plot
	// tlLabelRows rows of tlLabelRowH units hold the marks' labels.
	tlLabelRows = 4
	tlLabelRowH = 10
	tlPlotH     = 110
	tlRight     = 12
	tlLegendH   = 14
)

// Colours: a backend's from backendColours, in the order of the backends' names over the
// whole comparison, so that v1 has the same colour in every step and run; a failure
// key's from failureColours (red-ish), likewise; the unknown backend and the folded rest
// grey.
var (
	backendColours = []string{"#0969da", "#8250df", "#1b7c83", "#bf8700", "#4d2d00", "#0a3069", "#6639ba", "#116329"}
	failureColours = []string{"#cf222e", "#ff8182", "#a40e26", "#fa4549", "#82071e", "#ffaba8"}
)

const greyColour = "#8c959f"

// seriesColours gives every series key of rows' timelines its colour, keyed by kind and
// key (colourKey).
func seriesColours(rows []stepFigures) map[string]string {
	keys := map[string][]string{}
	seen := map[string]bool{}
	for _, r := range rows {
		for _, f := range r.runs {
			if f.Traffic == nil {
				continue
			}
			for _, s := range f.Traffic.TimelineSeries() {
				if ck := colourKey(s); !seen[ck] {
					seen[ck] = true
					keys[s.Kind] = append(keys[s.Kind], s.Key)
				}
			}
		}
	}
	out := map[string]string{}
	for kind, ks := range keys {
		slices.Sort(ks)
		i := 0
		for _, k := range ks {
			s := analysis.TrafficSeries{Key: k, Kind: kind}
			switch {
			case kind == analysis.SeriesOther || k == analysis.UnknownSeries:
				out[colourKey(s)] = greyColour
			case kind == analysis.SeriesFailure:
				out[colourKey(s)] = failureColours[i%len(failureColours)]
				i++
			default:
				out[colourKey(s)] = backendColours[i%len(backendColours)]
				i++
			}
		}
	}
	return out
}

func colourKey(s analysis.TrafficSeries) string { return s.Kind + "\x00" + s.Key }

// layoutTimeline lays out one run's timeline of one step: stacked bars of its series on
// an x axis in ms from the timeline's start, the marks as vertical lines, and a legend.
func layoutTimeline(step, title string, t *analysis.Traffic, colours map[string]string) svgTimeline {
	v := svgTimeline{Caption: title}
	switch {
	case t == nil:
		v.Note = "No traffic event in this step."
		return v
	case t.Timeline == nil:
		v.Note = "No timeline: " + problemText(t) + "."
		return v
	}
	if t.TimelineProblem != "" {
		v.Problem = "Timeline: " + words.Sanitize(t.TimelineProblem) + "."
	}
	if t.MarksLeftOut > 0 {
		v.Problem = strings.TrimSpace(v.Problem + " " + upperFirst(marksLeftOutText(t)) + ".")
	}
	tl := t.Timeline
	series := t.TimelineSeries()
	n, span := t.Buckets(), t.SpanMS()
	v.Width, v.PlotX, v.PlotY, v.PlotW, v.PlotH = tlWidth, tlPlotX, tlPlotTop, tlWidth-tlPlotX-tlRight, tlPlotH
	v.PlotBottom = v.PlotY + v.PlotH
	v.TickBottom = v.PlotBottom + 3
	top := stackedTop(series, n)
	totals := v.addBars(series, n, top, colours)
	x := func(ms float64) float64 { return float64(v.PlotX) + min(max(ms/span, 0), 1)*float64(v.PlotW) }
	v.addAxes(tl, span, top, x)
	kinds := v.addMarks(t.Marks, x)
	v.addLegend(totals, kinds)
	v.Title = fmt.Sprintf("%s, %s: requests per %g ms bucket over %g ms%s; %s", step, title, tl.BucketMS,
		span, startText(tl), strings.Join(totals, ", "))
	if len(t.Marks) > 0 {
		v.Title += "; marked: " + markList(t.Marks, false)
	}
	return v
}

// stackedTop is the y axis's top: the busiest of the n buckets' stacked count (1 when
// every bucket is empty).
func stackedTop(series []analysis.TrafficSeries, n int) float64 {
	top := 0.0
	for i := range n {
		h := 0.0
		for _, s := range series {
			h += float64(s.Counts[i])
		}
		top = max(top, h)
	}
	if top == 0 {
		top = 1
	}
	return top
}

// addBars stacks each series' bars on the ones before it, and returns the series'
// totals as the legend says them ("v1 120").
func (v *svgTimeline) addBars(series []analysis.TrafficSeries, n int, top float64, colours map[string]string) []string {
	bw := float64(v.PlotW) / float64(n)
	base := make([]float64, n)
	var totals []string
	for _, s := range series {
		var d strings.Builder
		for i, c := range s.Counts {
			if c <= 0 {
				continue
			}
			h := float64(c) / top * float64(v.PlotH)
			y := float64(v.PlotBottom) - base[i] - h
			fmt.Fprintf(&d, "M%.1f %.1fh%.1fv%.1fh%.1fZ", float64(v.PlotX)+float64(i)*bw, y, bw, h, -bw)
			base[i] += h
		}
		key := words.Clip(words.Sanitize(s.Key), 40)
		totals = append(totals, fmt.Sprintf("%s %d", key, s.Total))
		v.Series = append(v.Series, svgSeries{Key: key, Colour: colours[colourKey(s)], Path: d.String(),
			Title: fmt.Sprintf("%s: %s", key, words.Count(s.Total, "request"))})
	}
	return totals
}

// addAxes puts ticks on the x axis (ms, x placing them) and labels both axes.
func (v *svgTimeline) addAxes(tl *xdslog.Timeline, span, top float64, x func(float64) float64) {
	tick := niceStep(span, 6)
	for i := 0; float64(i)*tick <= span*(1+1e-9); i++ {
		ms := float64(i) * tick
		v.XTicks = append(v.XTicks, svgTick{X: fmt.Sprintf("%.1f", x(ms)), Y: fmt.Sprint(v.PlotBottom + 12), Label: fmt.Sprintf("%g", ms)})
	}
	v.YTop = svgTick{X: fmt.Sprint(v.PlotX - 4), Y: fmt.Sprint(v.PlotY + 8), Label: fmt.Sprintf("%g", top)}
	v.YZero = svgTick{X: fmt.Sprint(v.PlotX - 4), Y: fmt.Sprint(v.PlotBottom), Label: "0"}
	v.Axis = svgTick{X: fmt.Sprint(v.PlotX), Y: fmt.Sprint(v.PlotBottom + 26),
		Label: fmt.Sprintf("ms from %s; bars: requests per %g ms", strings.TrimPrefix(startText(tl), " from "), tl.BucketMS)}
	if tl.Start.IsZero() {
		v.Axis.Label = fmt.Sprintf("ms (no start time recorded); bars: requests per %g ms", tl.BucketMS)
	}
}

// addMarks draws each mark as a vertical line at x(its ms), labelled when there are few
// enough, and returns the kinds of marks drawn.
func (v *svgTimeline) addMarks(marks []analysis.TrafficMark, x func(float64) float64) map[string]bool {
	labelled := len(marks) <= maxLabelledMarks
	kinds := map[string]bool{}
	// Labels go in the first row above the plot where they clear the row's last label;
	// one that fits in none keeps only its tooltip.
	rowEnd := make([]float64, tlLabelRows)
	for i := range rowEnd {
		rowEnd[i] = math.Inf(-1)
	}
	for _, m := range marks {
		kinds[m.Kind] = true
		label := markLabel(m)
		mx := x(m.AtMS)
		mk := svgMark{Kind: m.Kind, Title: fmt.Sprintf("%s at %s ms", label, fmtMS(m.AtMS)), X: fmt.Sprintf("%.1f", mx),
			Y1: fmt.Sprint(v.PlotY), Y2: fmt.Sprint(v.PlotBottom), Thin: !labelled}
		if labelled {
			v.placeLabel(&mk, label, mx, rowEnd)
		}
		v.Marks = append(v.Marks, mk)
	}
	return kinds
}

// placeLabel puts a mark's label right of its line (left when it would leave the
// drawing) in the first row it clears, recording the row's new end in rowEnd.
func (v *svgTimeline) placeLabel(mk *svgMark, label string, mx float64, rowEnd []float64) {
	w := float64(utf8.RuneCountInString(label)) * svgCharW
	from, to, end := mx+2, mx+2+w, false
	if to > float64(v.Width)-2 {
		from, to, end = mx-2-w, mx-2, true
	}
	for row, e := range rowEnd {
		if from < e+4 {
			continue
		}
		rowEnd[row] = to
		mk.Label, mk.LabelEnd = label, end
		mk.Y1, mk.LabelY = fmt.Sprint(2+row*tlLabelRowH), fmt.Sprint(tlLabelRowH-2+row*tlLabelRowH)
		mk.LabelX = fmt.Sprintf("%.1f", mx+2)
		if end {
			mk.LabelX = fmt.Sprintf("%.1f", mx-2)
		}
		return
	}
}

// addLegend lays out the legend below the plot, wrapping: a swatch per series with its
// total, then a line sample per kind of mark drawn; it sets the drawing's height.
func (v *svgTimeline) addLegend(totals []string, kinds map[string]bool) {
	lx, ly := v.PlotX, v.PlotBottom+44
	add := func(it svgLegendItem) {
		w := 22 + int(float64(utf8.RuneCountInString(it.Text))*svgCharW) + 12
		if lx+w > v.Width-4 && lx > v.PlotX {
			lx, ly = v.PlotX, ly+tlLegendH
		}
		it.X, it.Y, it.TextX, it.TextY, it.LineX, it.LineY2 = lx, ly-9, lx+16, ly, lx+5, ly+1
		lx += w
		v.Legend = append(v.Legend, it)
	}
	for i, s := range v.Series {
		add(svgLegendItem{Colour: s.Colour, Text: totals[i]})
	}
	for _, k := range []struct{ kind, text string }{{xdslog.EventPublish, "publish"}, {xdslog.EventAck, "ACK"}, {xdslog.EventNack, "NACK"}} {
		if kinds[k.kind] {
			add(svgLegendItem{Kind: k.kind, Text: k.text})
		}
	}
	v.Height = ly + 8
}

// niceStep is a tick spacing of 1, 2 or 5 times a power of ten that puts at most about
// ticks ticks on span.
func niceStep(span float64, ticks int) float64 {
	raw := span / float64(ticks)
	if !(raw > 0) || math.IsInf(raw, 0) {
		return math.Max(span, 1)
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}
