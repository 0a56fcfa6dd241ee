package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// unansweredRequests are the names a run's client asked for by name in step, per type,
// of the types the run never sent in the whole run. A wildcard request (no names) is
// never counted: only a subscription by name can be a subset of a type.
func unansweredRequests(r *Run, step string) map[string][]string {
	sent := map[string]bool{}
	asked := map[string][]string{}
	for _, e := range r.Events {
		switch {
		case e.Event == xdslog.EventSend:
			sent[e.Type] = true
		case e.Event == xdslog.EventRequest && e.Step == step:
			names := e.Names
			if r.Mode == protocol.Delta {
				names = e.Added
			}
			for _, n := range names {
				if !slices.Contains(asked[e.Type], n) {
					asked[e.Type] = append(asked[e.Type], n)
				}
			}
		}
	}
	for t := range asked {
		if sent[t] {
			delete(asked, t)
		}
	}
	return asked
}

// sentTypes says which types a run sent at all.
func sentTypes(r *Run) map[string]bool {
	out := map[string]bool{}
	for _, e := range r.Events {
		if e.Event == xdslog.EventSend {
			out[e.Type] = true
		}
	}
	return out
}

// unansweredFindings: a type one run's client asked for by name in step and that run
// never sent, while the other run sent it. SotW on the SnapshotCache built with ads=true
// (--cache snapshot) is the go-control-plane ADS rule (cite.SnapshotADSSuperset): a
// request whose names do not cover the type's snapshot is never answered. The protocol
// lets a client name a subset, so it is never the protocol's; any other run is not
// attributed.
func unansweredFindings(runs [2]*Run, step string) []Finding {
	var out []Finding
	for i, r := range runs {
		other := runs[1-i]
		otherSent := sentTypes(other)
		asked := unansweredRequests(r, step)
		types := make([]string, 0, len(asked))
		for t := range asked {
			if otherSent[t] {
				types = append(types, t)
			}
		}
		slices.Sort(types)
		for _, t := range types {
			a := unattributed("not attributed: no component recorded for it")
			if r.Mode == protocol.SotW && runCache(r) == cacheSnapshot {
				a = implementation(cite.SnapshotADSSuperset)
				a.sides[i] = []cite.Source{cite.SnapshotADSSuperset}
			}
			text := fmt.Sprintf("%s: %s never answered its %s request for %s (no %s send in the run); %s sent %s",
				words.Step(step), r.Name(), t, codeList(asked[t]), t, other.Name(), t)
			out = append(out, newFinding(step, "unanswered", text, a))
		}
	}
	return out
}

// codeList is names as code spans, comma-separated.
func codeList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}
