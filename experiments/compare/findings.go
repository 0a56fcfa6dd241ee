package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// detail is what a step's findings need beyond the step's counts: which names were
// removed and how, why content the client already ran was sent again, which requests
// were stale, and what happened on streams opened by a reconnect. All of it comes from
// the one analysis.Accumulator (its step figures and its per-send facts); only the
// attribution of redundancy to a cause is compare's own.
type detail struct {
	explicit map[string][]string // type -> names in removed_resources
	absence  map[string][]string // type -> names a SotW LDS/CDS response left out
	re       *analysis.Reconnect
	// causes counts, per type, redundant resources by why they were sent (cause*
	// constants).
	causes map[string]*[numCauses]int
	// stale are the step's stale requests (SotW requests go-control-plane skipped).
	stale []xdslog.Event
}

type streamKey struct {
	server int
	stream int64
}

type typeKey struct {
	streamKey
	typ string
}

// sendKey names one send: nonces are unique per stream and type.
type sendKey struct {
	typeKey
	nonce string
}

// replayed is what one pass over a run's events yields: per-step details for the
// findings and per-send annotations for the diagrams.
type replayed struct {
	steps map[string]*detail
	// absent lists, per SotW LDS/CDS send, the names the previous response of that type
	// on the stream had and this one leaves out: a removal by absence.
	absent map[sendKey][]string
}

// replay returns the run's replay, computed once.
func (r *Run) replay() *replayed {
	if r.replayed == nil {
		r.replayed = replayEvents(r)
	}
	return r.replayed
}

// details returns the per-step details of a run.
func details(r *Run) map[string]*detail { return r.replay().steps }

func replayEvents(r *Run) *replayed {
	out := &replayed{steps: map[string]*detail{}, absent: map[sendKey][]string{}}
	get := func(step string) *detail {
		d, ok := out.steps[step]
		if !ok {
			d = &detail{causes: map[string]*[numCauses]int{}}
			out.steps[step] = d
		}
		return d
	}
	strategy := sotwStrategy(r)
	acc := analysis.NewAccumulator()
	acc.OnSend(func(e xdslog.Event, info analysis.SendInfo) {
		if len(info.Absent) > 0 {
			out.absent[sendKey{typeKey{streamKey{e.Server, e.Stream}, e.Type}, e.Nonce}] = info.Absent
		}
		classifyRedundant(get(e.Step), e, info.OnNewStream && info.FirstOfType, info.TypeChanged, len(info.Absent) > 0, strategy)
	})
	for _, e := range r.Events {
		if e.Event == xdslog.EventStale {
			get(e.Step).stale = append(get(e.Step).stale, e)
		}
		acc.Observe(e)
	}
	for _, st := range acc.Summary().Steps {
		d := get(st.Name)
		d.explicit, d.absence, d.re = st.RemovedNames, st.AbsentNames, st.Reconnect
		if d.explicit == nil {
			d.explicit = map[string][]string{}
		}
		if d.absence == nil {
			d.absence = map[string][]string{}
		}
	}
	return out
}

// classifyRedundant counts why a send carried content its client already ran. In SotW
// the first send of a type on a reconnected stream is the cache answering a new stream;
// an LDS/CDS response that mixes changed and unchanged resources, or leaves a name out,
// is the full-state rule (protocol: the unchanged rest must come along); an RDS/EDS one
// mixing them is the SnapshotCache's whole-type answer; a response with nothing new
// moved only its label. In delta the server believed the client had something else: it
// takes what it sent, even rejected, as delivered. (attribution.go, causeSource, says
// what each cause is with the run's cache.)
func classifyRedundant(d *detail, e xdslog.Event, firstOnFresh, typeChanged, removesByAbsence bool, strategy string) {
	redundant := 0
	for _, x := range e.Resources {
		if x.IsRedundant() {
			redundant++
		}
	}
	if redundant == 0 {
		return
	}
	cause := causeDeltaSent
	if e.Mode == protocol.SotW {
		switch {
		case firstOnFresh:
			cause = causeNewStream
		case (redundant < len(e.Resources) || removesByAbsence) && (e.Type == "LDS" || e.Type == "CDS"):
			cause = causeFullState
		case redundant < len(e.Resources):
			cause = causeWholeType
		case !typeChanged && strategy == "uniform":
			cause = causeUniform
		default:
			cause = causeLabel
		}
	}
	c := d.causes[e.Type]
	if c == nil {
		c = new([numCauses]int)
		d.causes[e.Type] = c
	}
	c[cause] += redundant
}

// findings computes the report's findings for the compared steps. Each kind is emitted
// only when the figures support it, and each says whether it shows the protocol or an
// implementation, and where (attribution.go), and what it says in the terms a matrix of
// runs compares (its facets).
func findings(runs [2]*Run, rep *Report, steps []string, summary [2]map[string]*analysis.Step) []Finding {
	det := [2]map[string]*detail{details(runs[0]), details(runs[1])}
	out := []Finding{}
	for i, s := range steps {
		var st [2]*analysis.Step
		var d [2]*detail
		for j := range runs {
			st[j] = summary[j][s]
			d[j] = det[j][s]
			if d[j] == nil {
				d[j] = &detail{}
			}
		}
		out = append(out, stepFindings(runs, s, rep.Rows[i].Runs, rep.Versions[i], st, d)...)
		out = append(out, unansweredFindings(runs, s)...)
	}
	settleFindings(runs, out)
	if x, ok := totalFinding(runs, rep, len(steps), out); ok {
		out = append(out, x)
		settleFindings(runs, out[len(out)-1:])
	}
	return out
}

// newFinding is a finding with its verdict, whose label and source it states.
func newFinding(step, kind, text string, a attribution) Finding {
	return Finding{Step: step, Kind: kind, Text: text, Attribution: a.attr, Source: a.source(), verdict: a}
}

// implementation is an implementation's verdict resting on srcs.
func implementation(srcs ...cite.Source) attribution {
	return attribution{attr: AttrImplementation, srcs: srcs}
}

// settleFindings passes every finding's verdict, and its facets', through the one rule
// (attribution.settle), and says under what a protocol finding was observed.
func settleFindings(runs [2]*Run, fs []Finding) {
	for i := range fs {
		f := &fs[i]
		f.verdict = f.verdict.settle(runs)
		f.Attribution, f.Source = f.verdict.attr, f.verdict.source()
		f.ObservedWith = ""
		if f.Attribution == AttrProtocol {
			f.ObservedWith = observedWith(runs[:])
		}
		for j := range f.facets {
			f.facets[j].attr = f.facets[j].attr.settle(runs)
		}
	}
}

// observedWith names each run's protocol, cache and client: "A sotw, snapshot cache,
// Envoy; B delta, linear cache, Envoy".
func observedWith(runs []*Run) string {
	var parts []string
	for _, r := range runs {
		p := []string{r.Label + " " + r.Mode.String()}
		if r.Meta != nil {
			p = append(p, runCache(r)+" cache")
		}
		if c := clientTitle(clientKind(r)); c != "" {
			p = append(p, c)
		}
		parts = append(parts, strings.Join(p, ", "))
	}
	return strings.Join(parts, "; ")
}

// stepFindings are one step's findings, from both runs' figures f, checkpoint cp,
// summaries st and details d.
func stepFindings(runs [2]*Run, s string, f [2]Figures, cp Checkpoint, st [2]*analysis.Step, d [2]*detail) []Finding {
	var out []Finding
	add := func(kind string, a attribution, facets []facet, format string, args ...any) {
		x := newFinding(s, kind, words.Step(s)+": "+fmt.Sprintf(format, args...), a)
		x.facets = facets
		out = append(out, x)
	}
	one := func(shape string, a attribution) []facet { return []facet{{shape: shape, attr: a}} }

	// Versions: which tracked resources (the versions table's) moved at this checkpoint.
	if mv := [2][]string{movedLabels(cp.Runs[0]), movedLabels(cp.Runs[1])}; movedApart(runs, cp, st) {
		a := attributeVersions(runs)
		add("versions", a, one(versionsShape(runs, cp, mv), a), "%s moved %s; %s moved %s",
			runs[0].Name(), movedText(cp.Runs[0], mv[0]), runs[1].Name(), movedText(cp.Runs[1], mv[1]))
	}

	// Redundant pushes.
	if f[0].Redundant > 0 || f[1].Redundant > 0 {
		add("redundant", attributeRedundant(runs, d, ""), redundantFacets(runs, st, d),
			"%s; %s", redundantText(runs[0], f[0]), redundantText(runs[1], f[1]))
	}

	// NACKs and re-sends of rejected content.
	if f[0].Nacks > 0 || f[1].Nacks > 0 {
		a := attributeNack(runs, f)
		add("nack", a, one(nackShape(runs, f, st), a), "%s; %s", nackText(runs[0], f[0], st[0]), nackText(runs[1], f[1], st[1]))
	}

	// Removals: explicit (delta removed_resources) or by absence (SotW LDS/CDS).
	if f[0].RemovedExplicit+f[0].RemovedByAbsence+f[1].RemovedExplicit+f[1].RemovedByAbsence > 0 {
		a := protocolVerdict(cite.SpecDeleting)
		add("removal", a, one(removalShape(runs, d), a), "%s; %s", removalText(runs[0], d[0]), removalText(runs[1], d[1]))
	}

	// Reconnects: what each control plane sent on the new stream.
	if d[0].re != nil || d[1].re != nil {
		a := attributeReconnect(runs, d)
		add("reconnect", a, one(reconnectShape(runs, d), a), "%s, %s; %s", reconnectWhen(d), reconnectText(runs[0], d[0].re), reconnectText(runs[1], d[1].re))
	}

	// Stale requests: skipped by the SotW server, so what they said did not happen there.
	for j, r := range runs {
		if x, ok := staleFinding(r, s, d[j]); ok {
			out = append(out, x)
		}
	}

	// On-demand subscribes, and SotW's NACK of a VHDS route configuration.
	out = append(out, onDemandFindings(runs, s, f, st)...)

	// Data plane: only when the two answers differ.
	if a, b := f[0].DataPlane, f[1].DataPlane; (a != nil || b != nil) && !sameAnswer(a, b) {
		add("dataplane", implementation(cite.DataPlane), nil, "the data plane answered differently: %s %s; %s %s",
			runs[0].Name(), dpOrNone(a), runs[1].Name(), dpOrNone(b))
	}

	// Anomalies: feedback that matched nothing, sends never answered.
	for j, r := range runs {
		if x, ok := anomalyFinding(r, s, f[j]); ok {
			out = append(out, x)
		}
	}
	return out
}

// reconnectWhen is what the step's new streams followed: the client's reconnect, or the
// restart of a control plane (the last run's that had one).
func reconnectWhen(d [2]*detail) string {
	what := "after the client reconnected"
	for _, x := range d {
		if x.re != nil && x.re.Server > 0 {
			what = fmt.Sprintf("after the control plane restarted (server %d)", x.re.Server)
		}
	}
	return what
}

// totalFinding is the bytes both runs sent over the compared steps (when either sent
// any), attributed as the step that makes most of the difference is (from stepOut, the
// steps' findings).
func totalFinding(runs [2]*Run, rep *Report, steps int, stepOut []Finding) (Finding, bool) {
	t := rep.Total
	if t[0].Bytes == 0 && t[1].Bytes == 0 {
		return Finding{}, false
	}
	sent := func(f Figures) string {
		return fmt.Sprintf("%s in %s (%s, %d redundant)", words.Count(f.Bytes, "byte"), words.Count(sumMap(f.Responses), "response"),
			words.Count(f.Resources, "resource"), f.Redundant)
	}
	text := fmt.Sprintf("total over %s: %s sent %s; %s sent %s", words.Count(steps, "step"),
		runs[0].Name(), sent(t[0]), runs[1].Name(), sent(t[1]))
	if t[0].Bytes > 0 && t[1].Bytes > 0 {
		text += fmt.Sprintf("; bytes %s/%s = %s", runs[0].Label, runs[1].Label, words.Ratio(t[0].Bytes, t[1].Bytes))
	}
	// The total is attributed as the step that makes most of its difference is; when no
	// step differs, or no finding explains that step, it is not attributed.
	ex := explain(stepOut, rep.Rows, metricBytes)
	if !ex.found {
		ex.attr = unattributed("not attributed: no compared step differs in bytes")
	} else {
		text += fmt.Sprintf("; the largest difference is in %s (%s %s, %s %s)", words.Step(ex.step),
			runs[0].Label, words.Count(ex.values[0], "byte"), runs[1].Label, words.Count(ex.values[1], "byte"))
		if ex.kind != "" {
			text += ", see its " + ex.kind + " finding"
		}
	}
	return newFinding("", "total", text, ex.attr), true
}

// staleFinding is one run's stale requests in a step, when it had any: the SotW server
// skipped them. It concerns one run, so a two-run report and a matrix state it alike.
func staleFinding(r *Run, step string, d *detail) (Finding, bool) {
	if len(d.stale) == 0 {
		return Finding{}, false
	}
	return newFinding(step, "stale", words.Step(step)+": "+staleText(r, d.stale), implementation(cite.StaleDropped)), true
}

// anomalyFinding is one run's feedback that matched no send and sends never answered
// in a step, when there were any.
func anomalyFinding(r *Run, step string, f Figures) (Finding, bool) {
	if f.Unmatched == 0 && f.Dropped == 0 {
		return Finding{}, false
	}
	return newFinding(step, "anomaly", words.Step(step)+": "+fmt.Sprintf("%s recorded %s and %s never answered before a stream closed",
		r.Name(), words.Count(f.Unmatched, "unmatched nonce"), words.Count(f.Dropped, "send")), attributeAnomaly(f)), true
}

// A facet is one aspect of a two-run finding that a matrix of runs compares across pairs
// (matrix.go): its key (the type, for redundant pushes; "" when the finding has one
// aspect), its shape, and its attribution in that pair. The shape is what the finding
// says with every figure that varies from run to run left out (bytes, how many NACKs a
// storm had, nonces, versions), naming each side by its mode, so that two pairs showing
// the same difference have equal shapes. A redundant shape holds typesMark where the
// types go, so that facets of several types can be stated together.
type facet struct {
	key, shape string
	attr       attribution
}

const typesMark = "{types}"

// Finding kinds a matrix compares across pairs of a SotW and a delta run, in report
// order; the others (stale, anomaly, dataplane, total) concern one run or one pair.
var pairKinds = []string{"versions", "redundant", "nack", "removal", "reconnect"}

// noneShape is a kind's shape in a pair that has no such finding in the step.
func noneShape(kind string) string {
	switch kind {
	case "versions":
		return "both moved the same tracked versions"
	case "redundant":
		return "neither re-sent unchanged " + typesMark
	case "nack":
		return "no NACK"
	case "removal":
		return "nothing removed"
	case "reconnect":
		return "no new stream"
	}
	return "no such finding"
}

// versionsShape is what a versions finding shows in a matrix: what each side moved at
// checkpoint cp, mv its labels (movedList).
func versionsShape(runs [2]*Run, cp Checkpoint, mv [2][]string) string {
	side := func(i int) string {
		if len(mv[i]) == 0 {
			return runs[i].Mode.String() + " moved no tracked version"
		}
		return runs[i].Mode.String() + " moved " + movedList(cp.Runs[i], mv[i])
	}
	return side(0) + "; " + side(1)
}

// redundantFacets has one facet per type that either run re-sent unchanged in the step:
// one response can re-send unchanged resources of one type for the protocol's reason
// (LDS/CDS full state) and of another for the cache's, and a matrix must tell them apart.
func redundantFacets(runs [2]*Run, st [2]*analysis.Step, d [2]*detail) []facet {
	did := func(i int, t string) bool {
		if st[i] == nil || st[i].Types[t] == nil {
			return false
		}
		return st[i].Types[t].Redundant > 0
	}
	var out []facet
	for _, t := range typesOf(st) {
		a, b := did(0, t), did(1, t)
		var shape string
		switch {
		case !a && !b:
			continue
		case a && b:
			shape = runs[0].Mode.String() + " and " + runs[1].Mode.String() + " both re-sent unchanged " + typesMark
		case a:
			shape = runs[0].Mode.String() + " re-sent unchanged " + typesMark + ", " + runs[1].Mode.String() + " did not"
		default:
			shape = runs[1].Mode.String() + " re-sent unchanged " + typesMark + ", " + runs[0].Mode.String() + " did not"
		}
		out = append(out, facet{key: t, shape: shape, attr: attributeRedundant(runs, d, t)})
	}
	return out
}

// typesOf lists the types of the steps' figures: analysis.Types first, then any other
// a log named, sorted.
func typesOf(st [2]*analysis.Step) []string {
	out := slices.Clone(analysis.Types)
	var extra []string
	for _, s := range st {
		if s == nil {
			continue
		}
		for t := range s.Types {
			if !slices.Contains(out, t) && !slices.Contains(extra, t) {
				extra = append(extra, t)
			}
		}
	}
	slices.Sort(extra)
	return append(out, extra...)
}

func nackShape(runs [2]*Run, f [2]Figures, st [2]*analysis.Step) string {
	side := func(i int) string {
		if f[i].Nacks == 0 {
			return runs[i].Mode.String() + " got no NACK"
		}
		var types []string
		for _, t := range typesOf(st) {
			if st[i] != nil && st[i].Types[t] != nil && st[i].Types[t].Nacks > 0 {
				types = append(types, t)
			}
		}
		if f[i].RejectedResends > 0 {
			return fmt.Sprintf("%s NACKed %s and re-sent the rejected content", runs[i].Mode, strings.Join(types, ", "))
		}
		return fmt.Sprintf("%s NACKed %s and did not re-send it", runs[i].Mode, strings.Join(types, ", "))
	}
	return side(0) + "; " + side(1)
}

// removalShape says how each side removed which names, without the types: with the
// LinearCaches, whether the delta EDS removal is explicit depends on timing (one type's
// cache is updated after the other, and the client may unsubscribe first), while the
// way a removal travels, by absence or explicitly, does not.
func removalShape(runs [2]*Run, d [2]*detail) string {
	side := func(i int) string {
		var parts []string
		for _, how := range []struct {
			word  string
			names map[string][]string
		}{{"explicitly", d[i].explicit}, {"by absence", d[i].absence}} {
			var names []string
			for _, t := range sortedNameKeys(how.names) {
				for _, n := range how.names[t] {
					names = words.AppendNew(names, n)
				}
			}
			if len(names) > 0 {
				slices.Sort(names)
				parts = append(parts, fmt.Sprintf("removed %s %s", words.NameList(names, "names"), how.word))
			}
		}
		if len(parts) == 0 {
			return runs[i].Mode.String() + " removed nothing"
		}
		return runs[i].Mode.String() + " " + strings.Join(parts, " and ")
	}
	return side(0) + "; " + side(1)
}

func sortedNameKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func reconnectShape(runs [2]*Run, d [2]*detail) string {
	side := func(i int) string {
		re := d[i].re
		switch {
		case re == nil:
			return runs[i].Mode.String() + " opened no new stream"
		case re.Responses == 0:
			return runs[i].Mode.String() + " sent nothing on the new stream"
		case re.Resources == 0:
			return runs[i].Mode.String() + " sent no resource on the new stream"
		case re.Redundant > 0:
			return runs[i].Mode.String() + " re-sent what the client already ran"
		}
		return runs[i].Mode.String() + " sent only what the client did not run"
	}
	return side(0) + "; " + side(1)
}

// staleText lists a run's stale requests in a step, e.g. "A sotw got 1 stale request,
// skipped by the server, so its subscription did not change: EDS unsubscribe
// -[inventory] n=3 (latest n=6)".
func staleText(r *Run, stale []xdslog.Event) string {
	var parts []string
	for i, e := range stale {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(stale)-3))
			break
		}
		what := e.Type
		if e.Kind != "" {
			what += " " + e.Kind
		}
		if len(e.Removed) > 0 {
			what += " -" + words.NameList(e.Removed, "names")
		}
		if len(e.Added) > 0 {
			what += " +" + words.NameList(e.Added, "names")
		}
		parts = append(parts, fmt.Sprintf("%s n=%s (latest n=%s)", what, e.Nonce, e.LatestNonce))
	}
	return fmt.Sprintf("%s got %s, skipped by the server, so its subscription did not change: %s",
		r.Name(), words.Count(len(stale), "stale request"), strings.Join(parts, ", "))
}

func redundantText(r *Run, f Figures) string {
	if f.Redundant > 0 {
		return fmt.Sprintf("%s re-sent %s (%s) among %s in %s (%s)",
			r.Name(), words.Count(f.Redundant, "unchanged resource"), words.Count(f.RedundantBytes, "byte"), words.Count(f.Resources, "resource"),
			words.Count(sumMap(f.Responses), "response"), words.Count(f.Bytes, "byte"))
	}
	switch {
	case sumMap(f.Responses) == 0:
		return r.Name() + " sent nothing"
	case f.Resources == 0:
		return fmt.Sprintf("%s sent %s without resources (%s)", r.Name(), words.Count(sumMap(f.Responses), "response"), words.Count(f.Bytes, "byte"))
	}
	return fmt.Sprintf("%s sent %s in %s (%s), none unchanged", r.Name(), words.Count(f.Resources, "resource"), words.Count(sumMap(f.Responses), "response"), words.Count(f.Bytes, "byte"))
}

func nackText(r *Run, f Figures, st *analysis.Step) string {
	if f.Nacks == 0 {
		return r.Name() + " got no NACK"
	}
	var types, resent []string
	for _, t := range analysis.Types {
		if tf := st.Types[t]; tf != nil {
			if tf.Nacks > 0 {
				types = append(types, t)
			}
			if tf.RejectedResends > 0 {
				resent = append(resent, t)
			}
		}
	}
	if f.RejectedResends == 0 {
		return fmt.Sprintf("%s got %s (%s) and re-sent the rejected content 0 times", r.Name(), words.Count(f.Nacks, "NACK"), strings.Join(types, ", "))
	}
	s := fmt.Sprintf("%s re-sent the rejected %s content %s", r.Name(), strings.Join(resent, ", "), words.Count(f.RejectedResends, "time"))
	if f.RejectedResends >= 2 {
		s += " (NACK storm: " + words.Count(f.Nacks, "NACK")
		if f.NackRate > 0 {
			s += fmt.Sprintf(", %.0f NACKs/s", f.NackRate)
		}
		return s + ")"
	}
	return s + " (" + words.Count(f.Nacks, "NACK") + ")"
}

func removalText(r *Run, d *detail) string {
	var parts []string
	for _, how := range []struct {
		word  string
		names map[string][]string
	}{{"explicitly", d.explicit}, {"by absence", d.absence}} {
		var types, names []string
		for _, t := range analysis.Types {
			if len(how.names[t]) > 0 {
				types = append(types, t)
				for _, n := range how.names[t] {
					names = words.AppendNew(names, n)
				}
			}
		}
		if len(types) == 0 {
			continue
		}
		who := fmt.Sprintf("%d resources", len(names))
		if len(names) <= 3 {
			who = "`" + strings.Join(names, "`, `") + "`"
		}
		parts = append(parts, fmt.Sprintf("removed %s %s (%s)", who, how.word, strings.Join(types, ", ")))
	}
	if len(parts) == 0 {
		return r.Name() + " removed nothing"
	}
	return r.Name() + " " + strings.Join(parts, " and ")
}

func reconnectText(r *Run, re *analysis.Reconnect) string {
	if re == nil {
		return r.Name() + " opened no new stream"
	}
	var s string
	switch {
	case re.Responses == 0:
		s = fmt.Sprintf("%s sent nothing on the new stream", r.Name())
	case re.Resources == 0:
		s = fmt.Sprintf("%s sent %s without resources (%s) on the new stream", r.Name(), words.Count(re.Responses, "response"), words.Count(re.Bytes, "byte"))
	default:
		s = fmt.Sprintf("%s sent %s with %s (%s) on the new stream, %d of them what the client already ran",
			r.Name(), words.Count(re.Responses, "response"), words.Count(re.Resources, "resource"), words.Count(re.Bytes, "byte"), re.Redundant)
	}
	switch {
	case re.InitialVersions > 0:
		s += fmt.Sprintf(" (the client sent %d initial_resource_versions)", re.InitialVersions)
	case len(re.Resume) > 0:
		s += fmt.Sprintf(" (the client resumed from version_info %s)", strings.Join(re.Resume, ", "))
	}
	return s
}

func sameAnswer(a, b *DataPlaneResult) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Status == b.Status && a.Backend == b.Backend && a.Flags == b.Flags && a.Correct == b.Correct
}

func dpOrNone(d *DataPlaneResult) string {
	if d == nil {
		return "made no request"
	}
	return d.Text
}

func sumMap(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
