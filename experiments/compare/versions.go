package compare

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The versions table's resources: every resource the compared runs' logs name, whatever
// the scenario (the teaching one, a pack scenario, a user's file), in one set shared by
// every run of a report or a matrix so that their columns line up.

// resourceKey is one resource of the versions table.
type resourceKey struct{ Type, Name string }

// versionResources is the set of resources the versions table and the "versions"
// finding cover for runs: every resource any of them names (Run.resources), sorted by
// type in display order (xdslog.Types, then any other type by name), then by name.
func versionResources(runs []*Run) []resourceKey {
	seen := map[resourceKey]bool{}
	for _, r := range runs {
		maps.Copy(seen, r.resources())
	}
	out := slices.Collect(maps.Keys(seen))
	slices.SortFunc(out, func(a, b resourceKey) int {
		return cmp.Or(compareTypes(a.Type, b.Type), strings.Compare(a.Name, b.Name))
	})
	return out
}

// resources returns the resources the run's xds.log names as content, computed once:
// published (a publish event's resources and deleted ones), sent (a send's or a storm's
// resources, less bodiless "does not exist" answers) or held by the client at a step's
// end (the ACKed versions analysis.Summarize keeps). Requests are not counted: a client
// may subscribe to names no scenario defines.
func (r *Run) resources() map[resourceKey]bool {
	if r.named != nil {
		return r.named
	}
	seen := map[resourceKey]bool{}
	add := func(typ, name string) {
		if typ != "" && name != "" {
			seen[resourceKey{typ, name}] = true
		}
	}
	for _, e := range r.Events {
		switch e.Event {
		case xdslog.EventPublish:
			for _, res := range slices.Concat(e.Resources, e.Deleted) {
				add(res.Type, res.Name)
			}
		case xdslog.EventSend, xdslog.EventStorm:
			for _, res := range e.Resources {
				if !res.NotFound {
					add(cmp.Or(res.Type, e.Type), res.Name)
				}
			}
		}
	}
	for _, st := range r.Summary.Steps {
		for typ, names := range st.Versions {
			for name := range names {
				add(typ, name)
			}
		}
	}
	r.named = seen
	return seen
}

// compareTypes orders types as xdslog.Types lists them, any other type after them by name.
func compareTypes(a, b string) int {
	ia, ib := slices.Index(xdslog.Types, a), slices.Index(xdslog.Types, b)
	if ia < 0 {
		ia = len(xdslog.Types)
	}
	if ib < 0 {
		ib = len(xdslog.Types)
	}
	return cmp.Or(cmp.Compare(ia, ib), strings.Compare(a, b))
}

// MaxVersionColumns bounds the resource columns of a run's group in the versions table:
// a set of more resources folds whole types into one column each, the type with the
// most resources first, until the columns fit; past that many types (only a hostile
// log has them), the types after the first MaxVersionColumns-1 share one column.
const MaxVersionColumns = 12

// maxMovedLabels bounds the resources a "versions" finding names one by one (as many as
// the table has columns before it folds); past it, it counts them per type.
const maxMovedLabels = MaxVersionColumns

// movedLabels names the resources of vs that moved: by type alone when the set has one
// resource of the type (the teaching scenario's LDS, RDS, CDS, EDS), else by type and
// name ("CDS `b`"). Within a set every label is distinct.
func movedLabels(vs VersionSet) []string {
	perType := map[string]int{}
	for _, r := range vs.Resources {
		perType[r.Type]++
	}
	var out []string
	for _, r := range vs.Resources {
		switch {
		case !r.Moved:
		case perType[r.Type] == 1:
			out = append(out, r.Type)
		default:
			out = append(out, r.Type+" `"+r.Name+"`")
		}
	}
	return out
}

// movedText says what of vs moved, labels (movedLabels) of all its tracked versions.
func movedText(vs VersionSet, labels []string) string {
	if len(labels) == 0 {
		return "no tracked version"
	}
	return fmt.Sprintf("%d of %d tracked versions (%s)", len(labels), len(vs.Resources), movedList(vs, labels))
}

// movedList lists labels, the resources of vs that moved, up to maxMovedLabels; past
// that it counts them per type ("LDS, CDS ×40, EDS ×40": a type with one resource in the
// set by its name alone, as movedLabels has it).
func movedList(vs VersionSet, labels []string) string {
	if len(labels) <= maxMovedLabels {
		return strings.Join(labels, ", ")
	}
	perType, moved := map[string]int{}, map[string]int{}
	var types []string
	for _, r := range vs.Resources {
		perType[r.Type]++
		if r.Moved {
			if moved[r.Type] == 0 {
				types = append(types, r.Type)
			}
			moved[r.Type]++
		}
	}
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = t
		if perType[t] > 1 {
			parts[i] = fmt.Sprintf("%s ×%d", t, moved[t])
		}
	}
	return strings.Join(parts, ", ")
}

// movedApart reports whether the two runs moved different resources at checkpoint cp.
// It leaves out a resource only one run's log names (runs of servers that name their
// resources apart, such as two lab tap logs, cannot be compared on it) and one either
// run's client fetched on demand in the step (st, the runs' summaries of it): such a
// version moved because the client asked for it, which the step's on-demand finding
// states, not because of how the servers label versions.
func movedApart(runs [2]*Run, cp Checkpoint, st [2]*analysis.Step) bool {
	fetched := map[resourceKey]bool{}
	for _, s := range st {
		if s != nil && s.OnDemand != nil {
			for _, f := range s.OnDemand.Fetches {
				fetched[resourceKey{f.Type, f.Name}] = true
			}
		}
	}
	a, b := cp.Runs[0].Resources, cp.Runs[1].Resources
	if len(a) != len(b) {
		return true
	}
	for i, r := range a {
		k := resourceKey{r.Type, r.Name}
		if r.Moved != b[i].Moved && !fetched[k] && runs[0].resources()[k] && runs[1].resources()[k] {
			return true
		}
	}
	return false
}
