package compare

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// clientTypes are the SotW types the Clients section goes through, in ADS order.
var clientTypes = []string{"LDS", "RDS", "CDS", "EDS", "SDS"}

// clientEvidence is what one run's xds.log shows of its client, in the compared steps.
type clientEvidence struct {
	run *Run
	// subs is each type's first subscription on the run's first stream.
	subs map[string]string
	// resume is each type's first resume request after a control-plane restart.
	resume     map[string]string
	resumeStep string
	// serverUp is each server's first event; reconnect is how long after the resumed
	// server's first event the client's stream on it opened (0: unknown).
	serverUp  map[int]time.Time
	opened    map[int]time.Time
	reconnect time.Duration
	// nacks are per step and type.
	nacks map[string]map[string]*nackEvidence
	// missing are the names a step's requests subscribed that the state lacks, as
	// [type, name].
	missing map[string][][2]string
	// answers counts a step's data-plane answers by status ("503", "no response").
	answers map[string]map[string]int
}

type nackEvidence struct {
	count         int
	reason        string
	kept, rejects string // the NACK's version_info, the version it rejected
	first, last   time.Time
}

// subscriptionText is how a request subscribes: "wildcard (no names)" or the names.
func subscriptionText(e xdslog.Event) string {
	if e.Wildcard && len(e.Names) == 0 {
		return "wildcard (no names)"
	}
	return "names " + strings.Join(e.Names, ",")
}

func gatherClientEvidence(r *Run, in map[string]bool) clientEvidence {
	ev := clientEvidence{run: r, serverUp: map[int]time.Time{}, opened: map[int]time.Time{}, subs: map[string]string{}, resume: map[string]string{},
		nacks: map[string]map[string]*nackEvidence{}, missing: map[string][][2]string{}, answers: map[string]map[string]int{}}
	for _, e := range r.Events {
		if !in[e.Step] {
			continue
		}
		if _, ok := ev.serverUp[e.Server]; !ok && e.Server > 0 {
			ev.serverUp[e.Server] = e.TS
		}
		switch e.Event {
		case xdslog.EventStreamOpen:
			if _, ok := ev.opened[e.Server]; !ok {
				ev.opened[e.Server] = e.TS
			}
		case xdslog.EventRequest:
			ev.request(e)
		case xdslog.EventNack:
			ev.nack(e, 1)
		case xdslog.EventStorm:
			if e.Nacks > 0 {
				ev.nack(e, e.Nacks)
			}
		case xdslog.EventDataPlane:
			status := "no response"
			if e.Status != 0 {
				status = fmt.Sprint(e.Status)
			}
			if ev.answers[e.Step] == nil {
				ev.answers[e.Step] = map[string]int{}
			}
			ev.answers[e.Step][status]++
		}
	}
	return ev
}

func (ev *clientEvidence) request(e xdslog.Event) {
	switch e.Kind {
	case xdslog.RequestInitial, xdslog.RequestWildcard:
		if _, ok := ev.subs[e.Type]; !ok {
			ev.subs[e.Type] = subscriptionText(e)
		}
	case xdslog.RequestResume:
		if ev.resumeStep == "" {
			ev.resumeStep = e.Step
			if up, ok := ev.serverUp[e.Server]; ok && e.Server > 1 {
				ev.reconnect = ev.opened[e.Server].Sub(up)
			}
		}
		if _, ok := ev.resume[e.Type]; !ok && e.Step == ev.resumeStep {
			ev.resume[e.Type] = fmt.Sprintf("version_info %q, %s", e.Version, subscriptionText(e))
		}
	}
	for _, m := range e.Missing {
		if tn := [2]string{e.Type, m}; !slices.Contains(ev.missing[e.Step], tn) {
			ev.missing[e.Step] = append(ev.missing[e.Step], tn)
		}
	}
}

func (ev *clientEvidence) nack(e xdslog.Event, n int) {
	byType := ev.nacks[e.Step]
	if byType == nil {
		byType = map[string]*nackEvidence{}
		ev.nacks[e.Step] = byType
	}
	ne := byType[e.Type]
	if ne == nil {
		ne = &nackEvidence{reason: e.Error, rejects: e.SentVersion, first: e.TS}
		if e.AcceptedVersion != nil {
			ne.kept = *e.AcceptedVersion
		}
		if e.FirstTS != nil {
			ne.first = *e.FirstTS
		}
		byType[e.Type] = ne
	}
	ne.count += n
	ne.last = e.TS
}

// rate is NACKs per second between the first and the last ("" for one NACK).
func (ne *nackEvidence) rate() string {
	d := ne.last.Sub(ne.first).Seconds()
	if ne.count < 2 || d <= 0 {
		return ""
	}
	return fmt.Sprintf(", %.0f/s", float64(ne.count)/d)
}

// reasonExcerpt is the end of a NACK's error_detail, whitespace collapsed: both clients
// put the rule that failed last (Envoy's text starts with the whole resource).
func reasonExcerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const keep = 160
	if r := []rune(s); len(r) > keep {
		return "…" + string(r[len(r)-keep:])
	}
	return s
}

func subscriptionDiffs(kinds [2]string, ev [2]clientEvidence) []ClientDifference {
	var out []ClientDifference
	for _, t := range clientTypes {
		a, b := ev[0].subs[t], ev[1].subs[t]
		if a == "" || b == "" || a == b {
			continue
		}
		out = append(out,
			ClientDifference{Topic: "subscription", Type: t, Runs: [2]string{a, b},
				verdict: sides(kinds, "subscription", cite.SpecWildcard)},
			ClientDifference{Topic: "ack-names", Type: t, Runs: [2]string{"ACKs list " + a, "ACKs list " + b},
				verdict: sides(kinds, "ack-names")})
	}
	return out
}

func nackDiffs(kinds [2]string, ev [2]clientEvidence, steps []string) []ClientDifference {
	var out []ClientDifference
	for _, s := range steps {
		for _, t := range clientTypes {
			na, nb := ev[0].nacks[s][t], ev[1].nacks[s][t]
			if na == nil || nb == nil {
				continue
			}
			kept := [2]string{
				fmt.Sprintf("NACKed version %q and kept version %q", na.rejects, na.kept),
				fmt.Sprintf("NACKed version %q and kept version %q", nb.rejects, nb.kept)}
			d := ClientDifference{Topic: "nack", Step: s, Type: t, Runs: kept, Same: kept[0] == kept[1]}

			if d.Same {
				d.verdict = protocolVerdict(cite.SpecNackVersion)
			} else {
				d.verdict = sides(kinds, "nack-reason")
			}
			out = append(out, d)
			if v := nackView(kinds, ev, s, t); v != nil {
				out = append(out, *v)
			}
			out = append(out,
				ClientDifference{Topic: "nack-reason", Step: s, Type: t,
					Runs:    [2]string{"says " + reasonExcerpt(na.reason), "says " + reasonExcerpt(nb.reason)},
					Same:    na.reason == nb.reason,
					verdict: sides(kinds, "nack-reason", cite.SpecErrorDetail)})
			if na.count != nb.count {
				out = append(out, ClientDifference{Topic: "nack-rate", Step: s, Type: t,
					Runs:    [2]string{words.Count(na.count, "NACK") + na.rate(), words.Count(nb.count, "NACK") + nb.rate()},
					verdict: sides(kinds, "nack-rate", cite.NackPolicy)})
			}
		}
	}
	return out
}

func reconnectDiffs(kinds [2]string, ev [2]clientEvidence) []ClientDifference {
	var out []ClientDifference
	if ev[0].resumeStep == "" || ev[0].resumeStep != ev[1].resumeStep {
		return nil
	}
	if da, db := ev[0].reconnect, ev[1].reconnect; da > 0 && db > 0 {
		out = append(out, ClientDifference{Topic: "reconnect-delay", Step: ev[0].resumeStep,
			Runs:    [2]string{reconnectDelayText(da), reconnectDelayText(db)},
			verdict: sides(kinds, "reconnect-delay")})
	}
	for _, t := range clientTypes {
		a, b := ev[0].resume[t], ev[1].resume[t]
		if a == "" || b == "" {
			continue
		}
		d := ClientDifference{Topic: "reconnect", Step: ev[0].resumeStep, Type: t,
			Runs: [2]string{"resumes with " + a, "resumes with " + b}, Same: a == b}
		if d.Same {
			d.verdict = protocolVerdict(cite.SpecReconnectVersion)
		} else {
			d.verdict = sides(kinds, "reconnect", cite.SpecReconnectVersion)
		}
		out = append(out, d)
	}
	return out
}

func doesNotExistDiffs(kinds [2]string, ev [2]clientEvidence, steps []string) []ClientDifference {
	var out []ClientDifference
	for _, s := range steps {
		ma, mb := ev[0].missing[s], ev[1].missing[s]
		if len(ma) == 0 || len(mb) == 0 {
			continue
		}
		var runs [2]string
		for i, m := range [2][][2]string{ma, mb} {
			var names, views []string
			for _, tn := range m {
				names = append(names, tn[0]+" "+tn[1])
				views = append(views, viewOf(ev[i].run, s, tn[0], tn[1]))
			}
			runs[i] = fmt.Sprintf("subscribed %s, which does not exist; its data plane answered %s%s",
				strings.Join(names, ","), answersText(ev[i].answers[s]), strings.Join(views, ""))
		}
		out = append(out, ClientDifference{Topic: "does-not-exist", Step: s, Runs: runs,
			verdict: sides(kinds, "does-not-exist", cite.SpecSotwDoesNotExist)})
	}
	return out
}

// nackView sets the clients' own views of a NACKed type's tracked resource side by side
// (nil when either run kept none).
func nackView(kinds [2]string, ev [2]clientEvidence, step, typ string) *ClientDifference {
	name := trackedName(typ)
	if name == "" {
		return nil
	}
	a, b := viewOf(ev[0].run, step, typ, name), viewOf(ev[1].run, step, typ, name)
	if a == "" || b == "" {
		return nil
	}
	a, b = strings.TrimPrefix(a, "; its "), strings.TrimPrefix(b, "; its ")
	return &ClientDifference{Topic: "nack-view", Step: step, Type: typ, Runs: [2]string{a, b}, Same: a == b,
		verdict: sides(kinds, "nack-view")}
}

func reconnectDelayText(d time.Duration) string {
	return fmt.Sprintf("opened its stream %.2f s after the restarted server's first event", d.Seconds())
}

// trackedName is the teaching resource of typ ("" when none is tracked).
func trackedName(typ string) string {
	for _, t := range Tracked {
		if t.Type == typ {
			return t.Name
		}
	}
	return ""
}

// answersText is a step's data-plane answers by status, most frequent first.
func answersText(m map[string]int) string {
	if len(m) == 0 {
		return "nothing (no request)"
	}
	keys := words.SortedKeys(m)
	slices.SortStableFunc(keys, func(a, b string) int { return m[b] - m[a] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
