package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/experiments/table"
)

// maxColumnNames bounds the moved resources a folded column names.
const maxColumnNames = 3

// versionColumn is one column of a run's group: a single resource, shown by its
// version, or a folded type (or the other types), shown by a count.
type versionColumn struct {
	head    string
	members []int // indices into a VersionSet's Resources
	// typed: every member has the column's type, so a name says which one.
	typed bool
}

// versionColumns lays out the columns of res, one run's resources at a checkpoint (every
// run of a report has the same; versionResources).
func versionColumns(res []compare.ResourceVersion) []versionColumn {
	byType := map[string][]int{}
	var types []string
	for i, r := range res {
		if byType[r.Type] == nil {
			types = append(types, r.Type)
		}
		byType[r.Type] = append(byType[r.Type], i)
	}
	folded := map[string]bool{}
	if len(res) > compare.MaxVersionColumns {
		bySize := slices.Clone(types)
		slices.SortStableFunc(bySize, func(a, b string) int { return len(byType[b]) - len(byType[a]) })
		n := len(res)
		for _, t := range bySize {
			if n <= compare.MaxVersionColumns || len(byType[t]) == 1 {
				break
			}
			folded[t], n = true, n-len(byType[t])+1
		}
	}
	var cols []versionColumn
	for i, t := range types {
		if i == compare.MaxVersionColumns-1 && len(types) > compare.MaxVersionColumns {
			var rest []int
			for _, o := range types[i:] {
				rest = append(rest, byType[o]...)
			}
			return append(cols, versionColumn{head: fmt.Sprintf("other ×%d", len(rest)), members: rest})
		}
		if folded[t] {
			cols = append(cols, versionColumn{head: fmt.Sprintf("%s ×%d", words.Sanitize(t), len(byType[t])), members: byType[t], typed: true})
			continue
		}
		for _, m := range byType[t] {
			cols = append(cols, versionColumn{head: words.Sanitize(words.Clip(t+" "+res[m].Name, 60)), members: []int{m}})
		}
	}
	return cols
}

// folds reports whether any column holds several resources (the legend then says how to
// read them).
func folds(cols []versionColumn) bool {
	return slices.ContainsFunc(cols, func(c versionColumn) bool { return len(c.members) > 1 })
}

// versionCell is a run's cell of column c at a checkpoint: a single resource's version
// (- for none), "*" when it moved; a folded column's "held/n", "v=" the version when every
// held one has the same, and "*k:" the k that moved, the first maxColumnNames named
// ("*all" when every one did).
func versionCell(vs compare.VersionSet, c versionColumn) table.Cell {
	var held, moved []compare.ResourceVersion
	for _, m := range c.members {
		if m >= len(vs.Resources) {
			continue
		}
		r := vs.Resources[m]
		if r.Version != "" {
			held = append(held, r)
		}
		if r.Moved {
			moved = append(moved, r)
		}
	}
	if len(c.members) == 1 {
		out := table.Cell{Text: "-"}
		if len(held) == 1 {
			out.Text, out.Title = words.Sanitize(words.Short(held[0].Version)), held[0].Version
		}
		if len(moved) == 1 {
			out.Text += "*"
			out.Class = "moved"
		}
		return out
	}
	out := table.Cell{Text: fmt.Sprintf("%d/%d", len(held), len(c.members))}
	if len(held) > 0 && !slices.ContainsFunc(held, func(r compare.ResourceVersion) bool { return r.Version != held[0].Version }) {
		out.Text += " v=" + words.Sanitize(words.Short(held[0].Version))
	}
	switch {
	case len(moved) == len(c.members):
		out.Text += " *all"
		out.Class = "moved"
	case len(moved) > 0:
		names := make([]string, len(moved))
		for i, r := range moved {
			names[i] = words.Clip(r.Name, 60)
			if !c.typed {
				names[i] = r.Type + " " + names[i]
			}
		}
		out.Text += fmt.Sprintf(" *%d: %s", len(moved), words.Sanitize(firstNames(names, maxColumnNames)))
		out.Title = words.Sanitize(firstNames(names, 50))
		out.Class = "moved"
	}
	return out
}

// firstNames joins the first n names, then says how many more there are.
func firstNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", +%d", len(names)-n)
}

// foldLegend is what the versions legend adds when a column holds several resources.
var foldLegend = fmt.Sprintf("over %d resources, the types with the most take one column each "+
	"(TYPE ×n; with more than %d types, those after the first %d share one, other ×n): "+
	"held/n = how many of the n the client ran, v= their version when all it ran have the same, "+
	"*k: the k that moved, the first %d named (*all: every one; the JSON lists every resource)",
	compare.MaxVersionColumns, compare.MaxVersionColumns, compare.MaxVersionColumns-1, maxColumnNames)
