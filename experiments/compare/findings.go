package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// detail is what a step's findings need beyond analysis.Summarize's counts: which names
// were removed and how, and what happened on streams opened by a reconnect. It is
// replayed from the events; the counts themselves always come from the summary.
type detail struct {
	explicit map[string][]string // type -> names in removed_resources
	absence  map[string][]string // type -> names a SotW LDS/CDS response left out
	re       *reconnect
}

// reconnect describes the streams a step opened after the run's first stream.
type reconnect struct {
	// Server is the control-plane instance of the new stream when it is a restarted one
	// (a number higher than any seen before), else 0: the client reconnected.
	Server    int
	Streams   int
	Responses int
	Resources int
	Redundant int
	// Identical counts sent resources whose content equals what the client last ACKed
	// for that name before the new stream: the recorder's per-stream redundant flag
	// cannot see this for SotW, whose requests carry no per-resource versions.
	Identical int
	Bytes     int
	// InitialVersions counts delta initial_resource_versions entries the client sent.
	InitialVersions int
	// Resume lists SotW version_info values the client resumed from.
	Resume []string
}

type streamKey struct {
	server int
	stream int64
}

type typeKey struct {
	streamKey
	typ string
}

// details replays a run's events once, step by step.
func details(r *Run) map[string]*detail {
	out := map[string]*detail{}
	get := func(step string) *detail {
		d, ok := out[step]
		if !ok {
			d = &detail{explicit: map[string][]string{}, absence: map[string][]string{}}
			out[step] = d
		}
		return d
	}
	lastNames := map[typeKey][]string{}
	sends := map[typeKey]map[string]xdslog.Event{}
	acked := map[string]string{} // type/name -> hash last ACKed, across streams
	anyStream, maxServer := false, 0
	fresh := map[streamKey]string{} // streams opened by a reconnect -> their step
	for _, e := range r.Events {
		d := get(e.Step)
		sk := streamKey{e.Server, e.Stream}
		tk := typeKey{sk, e.Type}
		switch e.Event {
		case xdslog.EventStreamOpen:
			if anyStream {
				if d.re == nil {
					d.re = &reconnect{}
				}
				d.re.Streams++
				if e.Server > maxServer {
					d.re.Server = e.Server
				}
				fresh[sk] = e.Step
			}
			anyStream = true
			maxServer = max(maxServer, e.Server)
		case xdslog.EventRequest:
			if step, ok := fresh[sk]; ok && step == e.Step {
				d.re.InitialVersions += len(e.InitialVersions)
				if e.Version != "" && !slices.Contains(d.re.Resume, e.Version) {
					d.re.Resume = append(d.re.Resume, e.Version)
				}
			}
		case xdslog.EventSend:
			for _, n := range e.Removed {
				d.explicit[e.Type] = appendNew(d.explicit[e.Type], n)
			}
			names := make([]string, len(e.Resources))
			for i, x := range e.Resources {
				names[i] = x.Name
			}
			if e.Mode == xdslog.ModeSotW && (e.Type == "LDS" || e.Type == "CDS") {
				for _, n := range lastNames[tk] {
					if !slices.Contains(names, n) {
						d.absence[e.Type] = appendNew(d.absence[e.Type], n)
					}
				}
				lastNames[tk] = names
			}
			if step, ok := fresh[sk]; ok && step == e.Step {
				d.re.Responses++
				d.re.Resources += len(e.Resources)
				d.re.Bytes += e.Bytes
				for _, x := range e.Resources {
					if x.IsRedundant() {
						d.re.Redundant++
					}
					if acked[e.Type+"/"+x.Name] == x.Hash {
						d.re.Identical++
					}
				}
			}
			if sends[tk] == nil {
				sends[tk] = map[string]xdslog.Event{}
			}
			sends[tk][e.Nonce] = e
		case xdslog.EventAck:
			s, ok := sends[tk][e.Nonce]
			if !ok {
				continue
			}
			if e.Mode == xdslog.ModeSotW && (e.Type == "LDS" || e.Type == "CDS") {
				for k := range acked {
					if strings.HasPrefix(k, e.Type+"/") {
						delete(acked, k)
					}
				}
			}
			for _, x := range s.Resources {
				acked[e.Type+"/"+x.Name] = x.Hash
			}
			for _, n := range s.Removed {
				delete(acked, e.Type+"/"+n)
			}
		case xdslog.EventStreamClose:
			for k := range sends {
				if k.streamKey == sk {
					delete(sends, k)
					delete(lastNames, k)
				}
			}
		}
	}
	return out
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// findings computes the report's findings for the compared steps. Each kind is emitted
// only when the figures support it.
func findings(runs [2]*Run, rep *Report, steps []string, summary [2]map[string]*analysis.Step) []Finding {
	det := [2]map[string]*detail{details(runs[0]), details(runs[1])}
	out := []Finding{}
	add := func(step, kind, format string, args ...any) {
		out = append(out, Finding{Step: step, Kind: kind, Text: stepName(step) + ": " + fmt.Sprintf(format, args...)})
	}
	for i, s := range steps {
		row, cp := rep.Rows[i], rep.Versions[i]
		var st [2]*analysis.Step
		var d [2]*detail
		for j := range runs {
			st[j] = summary[j][s]
			d[j] = det[j][s]
			if d[j] == nil {
				d[j] = &detail{}
			}
		}
		f := row.Runs

		// Versions: which tracked resources moved at this checkpoint.
		if mv := [2][]string{movedTypes(cp.Runs[0]), movedTypes(cp.Runs[1])}; !slices.Equal(mv[0], mv[1]) {
			add(s, "versions", "%s moved %s; %s moved %s",
				runs[0].Name(), movedText(mv[0], len(Tracked)), runs[1].Name(), movedText(mv[1], len(Tracked)))
		}

		// Redundant pushes.
		if f[0].Redundant > 0 || f[1].Redundant > 0 {
			add(s, "redundant", "%s; %s", redundantText(runs[0], f[0]), redundantText(runs[1], f[1]))
		}

		// NACKs and re-sends of rejected content.
		if f[0].Nacks > 0 || f[1].Nacks > 0 {
			add(s, "nack", "%s; %s", nackText(runs[0], f[0], st[0]), nackText(runs[1], f[1], st[1]))
		}

		// Removals: explicit (delta removed_resources) or by absence (SotW LDS/CDS).
		if f[0].RemovedExplicit+f[0].RemovedByAbsence+f[1].RemovedExplicit+f[1].RemovedByAbsence > 0 {
			add(s, "removal", "%s; %s", removalText(runs[0], d[0]), removalText(runs[1], d[1]))
		}

		// Reconnects: what each control plane sent on the new stream.
		if d[0].re != nil || d[1].re != nil {
			what := "after the client reconnected"
			for _, x := range d {
				if x.re != nil && x.re.Server > 0 {
					what = fmt.Sprintf("after the control plane restarted (server %d)", x.re.Server)
				}
			}
			add(s, "reconnect", "%s, %s; %s", what, reconnectText(runs[0], d[0].re), reconnectText(runs[1], d[1].re))
		}

		// Data plane: only when the two answers differ.
		if a, b := f[0].DataPlane, f[1].DataPlane; (a != nil || b != nil) && !sameAnswer(a, b) {
			add(s, "dataplane", "the data plane answered differently: %s %s; %s %s",
				runs[0].Name(), dpOrNone(a), runs[1].Name(), dpOrNone(b))
		}

		// Anomalies: feedback that matched nothing, sends never answered.
		for j, r := range runs {
			if f[j].Unmatched > 0 || f[j].Dropped > 0 {
				add(s, "anomaly", "%s recorded %s and %s never answered before a stream closed",
					r.Name(), count(f[j].Unmatched, "unmatched nonce"), count(f[j].Dropped, "send"))
			}
		}
	}
	t := rep.Total
	if t[0].Bytes > 0 || t[1].Bytes > 0 {
		text := fmt.Sprintf("total over %s: %s sent %d bytes in %d responses (%d resources, %d redundant); %s sent %d bytes in %d responses (%d resources, %d redundant)",
			count(len(steps), "step"), runs[0].Name(), t[0].Bytes, sumMap(t[0].Responses), t[0].Resources, t[0].Redundant,
			runs[1].Name(), t[1].Bytes, sumMap(t[1].Responses), t[1].Resources, t[1].Redundant)
		if t[0].Bytes > 0 && t[1].Bytes > 0 {
			text += fmt.Sprintf("; bytes %s/%s = %.2f", runs[0].Label, runs[1].Label, float64(t[0].Bytes)/float64(t[1].Bytes))
		}
		out = append(out, Finding{Kind: "total", Text: text})
	}
	return out
}

func movedTypes(vs VersionSet) []string {
	var out []string
	for _, r := range vs.Resources {
		if r.Moved {
			out = append(out, r.Type)
		}
	}
	return out
}

func movedText(types []string, of int) string {
	if len(types) == 0 {
		return "no tracked version"
	}
	return fmt.Sprintf("%d of %d tracked versions (%s)", len(types), of, strings.Join(types, ", "))
}

func redundantText(r *Run, f Figures) string {
	if f.Redundant > 0 {
		return fmt.Sprintf("%s re-sent %s (%d bytes) among %s in %s (%d bytes)",
			r.Name(), count(f.Redundant, "unchanged resource"), f.RedundantBytes, count(f.Resources, "resource"),
			count(sumMap(f.Responses), "response"), f.Bytes)
	}
	switch {
	case sumMap(f.Responses) == 0:
		return r.Name() + " sent nothing"
	case f.Resources == 0:
		return fmt.Sprintf("%s sent %s without resources (%d bytes)", r.Name(), count(sumMap(f.Responses), "response"), f.Bytes)
	}
	return fmt.Sprintf("%s sent %s in %s (%d bytes), none unchanged", r.Name(), count(f.Resources, "resource"), count(sumMap(f.Responses), "response"), f.Bytes)
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
		return fmt.Sprintf("%s got %s (%s) and re-sent the rejected content 0 times", r.Name(), count(f.Nacks, "NACK"), strings.Join(types, ", "))
	}
	s := fmt.Sprintf("%s re-sent the rejected %s content %s", r.Name(), strings.Join(resent, ", "), count(f.RejectedResends, "time"))
	if f.RejectedResends >= 2 {
		s += fmt.Sprintf(" (NACK storm: %d NACKs", f.Nacks)
		if f.NackRate > 0 {
			s += fmt.Sprintf(", %.0f NACKs/s", f.NackRate)
		}
		return s + ")"
	}
	return s + " (" + count(f.Nacks, "NACK") + ")"
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
					names = appendNew(names, n)
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

func reconnectText(r *Run, re *reconnect) string {
	if re == nil {
		return r.Name() + " opened no new stream"
	}
	var s string
	switch {
	case re.Responses == 0:
		s = fmt.Sprintf("%s sent nothing on the new stream", r.Name())
	case re.Resources == 0:
		s = fmt.Sprintf("%s sent %s without resources (%d bytes) on the new stream", r.Name(), count(re.Responses, "response"), re.Bytes)
	default:
		s = fmt.Sprintf("%s sent %s with %s (%d bytes) on the new stream, %d marked redundant",
			r.Name(), count(re.Responses, "response"), count(re.Resources, "resource"), re.Bytes, re.Redundant)
		if re.Server > 0 {
			s += fmt.Sprintf(", %d identical to what the client last ACKed", re.Identical)
		}
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

// count is "1 resource" or "3 resources".
func count(n int, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "sh"):
		return fmt.Sprintf("%d %ses", n, word) // publishes
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func sumMap(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
