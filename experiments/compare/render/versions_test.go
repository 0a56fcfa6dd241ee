package render

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/experiments/table"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// resourceKey is a resource as these tests name it: its type and name.
type resourceKey struct{ Type, Name string }

// runPack runs the built-in scenario name with the simulated client (in process, a
// second or so) in mode with cache, and loads the run as label.
func runPack(t *testing.T, name, label string, mode protocol.Mode, cache publish.Cache) *compare.Run {
	t.Helper()
	sc, err := scenario.Builtin(name)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), mode.String()+"-"+string(cache))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runner.Execute(ctx, runner.Options{Scenario: sc, Mode: mode, Client: runner.ClientSim, Cache: cache, Out: dir})
	require.NoError(t, err, "lab run %s --client sim --mode %s --cache %s", name, mode, cache)
	require.True(t, res.Passed, "%s %s %s: the run did not pass: %s", name, mode, cache, res.Failure)
	r, err := compare.Load(label, dir)
	require.NoError(t, err)
	return r
}

// manyPerType are the many-per-type scenario's resources as its file defines them:
// c-invalid is c again (its cds names c), so the table has ten.
var manyPerType = []resourceKey{
	{"LDS", "quote-listener"}, {"RDS", "quote-route"},
	{"CDS", "a"}, {"CDS", "b"}, {"CDS", "c"}, {"CDS", "d"},
	{"EDS", "a"}, {"EDS", "b"}, {"EDS", "c"}, {"EDS", "d"},
}

// TestVersionsOfManyPerType runs the pack's many-per-type scenario (its own resource
// names: clusters a to d) with the simulated client, SotW and delta, and checks that the
// versions table names those resources, in every format, and counts what moved as the
// summaries' held versions say.
func TestVersionsOfManyPerType(t *testing.T) {
	a := runPack(t, "many-per-type", "A", protocol.SotW, publish.SnapshotCache)
	b := runPack(t, "many-per-type", "B", protocol.Delta, publish.SnapshotCache)
	rep, err := compare.Compare(a, b, compare.Options{})
	require.NoError(t, err)
	require.Len(t, rep.Versions, 4)
	for _, cp := range rep.Versions {
		for i, vs := range cp.Runs {
			assert.Equal(t, manyPerType, keysOf(vs), "%s %s: the scenario's resources, in type order", cp.Step, rep.Runs[i].Mode)
			assert.Equal(t, heldMoves(t, []*compare.Run{a, b}[i], cp.Step), movedKeys(vs), "%s %s", cp.Step, rep.Runs[i].Mode)
			assert.Equal(t, len(movedKeys(vs)), vs.Moved, "%s %s", cp.Step, rep.Runs[i].Mode)
		}
	}
	// What the scenario is about, in delta: removing b moves b alone; the update with an
	// invalid c is NACKed whole; recovering re-sends c only, so d never arrives.
	delta := map[string]compare.VersionSet{}
	for _, cp := range rep.Versions {
		delta[cp.Step] = cp.Runs[1]
	}
	assert.Equal(t, []resourceKey{{"CDS", "b"}, {"EDS", "b"}}, movedKeys(delta["remove-one"]))
	assert.Empty(t, movedKeys(delta["one-invalid-among-three"]))
	assert.Empty(t, movedKeys(delta["recover"]))
	assert.Empty(t, version(delta["recover"], "CDS", "d"))
	sotwRecover := rep.Versions[3].Runs[0]
	assert.NotEmpty(t, version(sotwRecover, "CDS", "d"), "SotW re-sends the whole type: d arrives")
	assert.Contains(t, movedKeys(sotwRecover), resourceKey{"CDS", "d"})

	assert.Contains(t, finding(rep, "remove-one", "versions").Text, "B delta moved 2 of 10 tracked versions (CDS `b`, EDS `b`)")
	assert.Contains(t, finding(rep, "recover", "versions").Text, "B delta moved no tracked version")
	assert.Contains(t, finding(rep, "recover", "versions").Text, fmt.Sprintf("A sotw moved %d of 10 tracked versions", sotwRecover.Moved))

	assertManyPerTypeFormats(t, rep)
	var back compare.Report
	require.NoError(t, json.Unmarshal(render(t, rep, "json"), &back))
	assert.Equal(t, manyPerType, keysOf(back.Versions[1].Runs[1]))
	assert.Equal(t, 2, back.Versions[1].Runs[1].Moved)

	// A matrix of the four (both caches) has the same set in every column group, and
	// each run's checkpoints as its two-run report has them.
	c := runPack(t, "many-per-type", "C", protocol.SotW, publish.LinearCache)
	d := runPack(t, "many-per-type", "D", protocol.Delta, publish.LinearCache)
	m, err := compare.CompareMatrix([]*compare.Run{a, b, c, d}, compare.Options{})
	require.NoError(t, err)
	for i, cp := range m.Versions {
		assert.Equal(t, rep.Versions[i].Runs[0], cp.Runs[0], cp.Step)
		assert.Equal(t, rep.Versions[i].Runs[1], cp.Runs[1], cp.Step)
		for j, vs := range cp.Runs {
			assert.Equal(t, manyPerType, keysOf(vs), "%s %s", cp.Step, m.Runs[j].Label)
			assert.Equal(t, heldMoves(t, []*compare.Run{a, b, c, d}[j], cp.Step), movedKeys(vs), "%s %s", cp.Step, m.Runs[j].Label)
		}
	}
	var sb strings.Builder
	require.NoError(t, Matrix(&sb, m, "markdown", 0))
	assert.Contains(t, sb.String(), "| D CDS a | D CDS b | D CDS c | D CDS d |")
}

// assertManyPerTypeFormats: every format heads a column with each resource of the
// many-per-type scenario by type and name, and the text table's moved column counts
// what the report does (delta's remove-one: 2 of 10).
func assertManyPerTypeFormats(t *testing.T, rep *compare.Report) {
	t.Helper()
	text := string(render(t, rep, "text"))
	sec := text[strings.Index(text, "\nVERSIONS\n"):strings.Index(text, "\nFINDINGS\n")]
	rows := 0
	for _, line := range strings.Split(sec, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "remove-one" {
			rows++
			groups := strings.Split(line, " | ")
			require.Len(t, groups, 3, line)
			assert.True(t, strings.HasSuffix(groups[1], fmt.Sprintf(" %d/10", rep.Versions[1].Runs[0].Moved)), line)
			assert.True(t, strings.HasSuffix(groups[2], " 2/10"), line)
		}
	}
	assert.Equal(t, 1, rows, "the text table has a remove-one row:\n%s", sec)
	head := map[string]func(k resourceKey) string{
		"text":     func(k resourceKey) string { return " " + k.Type + " " + k.Name + " " },
		"markdown": func(k resourceKey) string { return "| B " + k.Type + " " + k.Name + " |" },
		"html":     func(k resourceKey) string { return "<th>" + k.Type + " " + k.Name + "</th>" },
	}
	for format, cellOf := range head {
		out := string(render(t, rep, format))
		for _, k := range manyPerType {
			assert.Contains(t, out, cellOf(k), "%s: the column of %s", format, k)
		}
		assert.NotContains(t, out, "CDS inventory", format)
		assert.Contains(t, out, "2/10", "%s: delta's remove-one moved 2 of 10", format)
	}
}

func keysOf(vs compare.VersionSet) []resourceKey {
	out := make([]resourceKey, len(vs.Resources))
	for i, r := range vs.Resources {
		out[i] = resourceKey{r.Type, r.Name}
	}
	return out
}

func movedKeys(vs compare.VersionSet) []resourceKey {
	out := []resourceKey{}
	for _, r := range vs.Resources {
		if r.Moved {
			out = append(out, resourceKey{r.Type, r.Name})
		}
	}
	return out
}

func version(vs compare.VersionSet, typ, name string) string {
	for _, r := range vs.Resources {
		if r.Type == typ && r.Name == name {
			return r.Version
		}
	}
	return ""
}

// heldMoves is what the run's summary says moved at step, independently of the table:
// every resource whose held version differs from the one at the end of the run's
// previous step, in the table's order.
func heldMoves(t *testing.T, r *compare.Run, step string) []resourceKey {
	t.Helper()
	prev := map[string]map[string]string{}
	for _, st := range r.Summary.Steps {
		if st.Name != step {
			prev = st.Versions
			continue
		}
		moved := []resourceKey{}
		for _, k := range manyPerType {
			if st.Versions[k.Type][k.Name] != prev[k.Type][k.Name] {
				moved = append(moved, k)
			}
		}
		// Nothing held outside the scenario's resources.
		for typ, names := range st.Versions {
			for name := range names {
				assert.Contains(t, manyPerType, resourceKey{typ, name}, "%s held at %s", r.Label, step)
			}
		}
		return moved
	}
	t.Fatalf("%s has no step %s", r.Label, step)
	return nil
}

// manyClustersRun is a synthetic run of n clusters (c-000, ...) beside one listener and
// one route: step initial sends and ACKs everything, step one-endpoint changes the
// endpoints of c-007 alone. SotW re-sends every EDS resource under a new label; delta
// sends c-007's new content alone.
func manyClustersRun(t *testing.T, label string, mode protocol.Mode, n int) *compare.Run {
	t.Helper()
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var lines []string
	emit := func(e xdslog.Event) {
		ts = ts.Add(time.Millisecond)
		e.TS, e.Mode, e.Server = ts, mode, 1
		data, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, string(data))
	}
	nonce := 0
	send := func(step, typ, label string, res xdslog.Resources) {
		nonce++
		emit(xdslog.Event{Event: xdslog.EventSend, Step: step, Stream: 1, Type: typ, Version: label, Nonce: fmt.Sprint(nonce), Bytes: 100, Resources: res})
		v := label
		emit(xdslog.Event{Event: xdslog.EventAck, Step: step, Stream: 1, Type: typ, Nonce: fmt.Sprint(nonce), SentVersion: label, AcceptedVersion: &v})
	}
	resource := func(name, label, content string) xdslog.Resource {
		if mode == protocol.Delta {
			label = fmt.Sprintf("%x", sha256.Sum256([]byte(name+content))) // a content hash
		}
		return xdslog.Resource{Name: name, Version: label, Hash: content}
	}
	clusters := func(typ, label string) xdslog.Resources {
		var out xdslog.Resources
		for i := range n {
			out = append(out, resource(fmt.Sprintf("c-%03d", i), label, typ+label))
		}
		return out
	}
	emit(xdslog.Event{Event: xdslog.EventStep, Step: "initial"})
	emit(xdslog.Event{Event: xdslog.EventStreamOpen, Step: "initial", Stream: 1})
	send("initial", "LDS", "1", xdslog.Resources{resource("quote-listener", "1", "l")})
	send("initial", "RDS", "1", xdslog.Resources{resource("quote-route", "1", "r")})
	send("initial", "CDS", "1", clusters("CDS", "1"))
	send("initial", "EDS", "1", clusters("EDS", "1"))
	emit(xdslog.Event{Event: xdslog.EventStep, Step: "one-endpoint"})
	if mode == protocol.Delta {
		send("one-endpoint", "EDS", "2", xdslog.Resources{resource("c-007", "2", "EDS2")})
	} else {
		send("one-endpoint", "EDS", "2", clusters("EDS", "2"))
	}
	r, err := compare.FromLog(label, []byte(strings.Join(lines, "\n")+"\n"))
	require.NoError(t, err)
	return r
}

// TestVersionsFoldManyResources: past MaxVersionColumns resources, a type with many takes
// one column that counts them and names the first that moved; the legend says so in every
// format, the JSON keeps every resource, and the versions finding counts per type.
func TestVersionsFoldManyResources(t *testing.T) {
	const n = 40
	rep, err := compare.Compare(manyClustersRun(t, "A", protocol.SotW, n), manyClustersRun(t, "B", protocol.Delta, n), compare.Options{})
	require.NoError(t, err)
	require.Len(t, rep.Versions, 2)
	for _, vs := range rep.Versions[1].Runs {
		require.Len(t, vs.Resources, 2+2*n)
	}
	assert.Equal(t, n, rep.Versions[1].Runs[0].Moved, "SotW: a new label on every EDS resource")
	assert.Equal(t, []resourceKey{{"EDS", "c-007"}}, movedKeys(rep.Versions[1].Runs[1]))

	tab := versionTable(rep)
	assert.Equal(t, []string{"end of step",
		"LDS quote-listener", "RDS quote-route", "CDS ×40", "EDS ×40", "moved",
		"LDS quote-listener", "RDS quote-route", "CDS ×40", "EDS ×40", "moved"}, tab.Head)
	texts := func(r []table.Cell) []string {
		out := make([]string, len(r))
		for i, c := range r {
			out[i] = c.Text
		}
		return out
	}
	assert.Equal(t, []string{"initial",
		"1*", "1*", "40/40 v=1 *all", "40/40 v=1 *all", "82/82",
		words.Short(version(rep.Versions[0].Runs[1], "LDS", "quote-listener")) + "*", words.Short(version(rep.Versions[0].Runs[1], "RDS", "quote-route")) + "*",
		"40/40 *all", "40/40 *all", "82/82"}, texts(tab.Rows[0]))
	assert.Equal(t, []string{"one-endpoint",
		"1", "1", "40/40 v=1", "40/40 v=2 *all", "40/82",
		words.Short(version(rep.Versions[0].Runs[1], "LDS", "quote-listener")), words.Short(version(rep.Versions[0].Runs[1], "RDS", "quote-route")),
		"40/40", "40/40 *1: c-007", "1/82"}, texts(tab.Rows[1]))

	for _, format := range []string{"text", "markdown", "html"} {
		out := strings.Join(strings.Fields(string(render(t, rep, format))), " ") // text wraps its legends
		assert.Contains(t, out, "over 12 resources, the types with the most take one column each", format)
		assert.Contains(t, out, "EDS ×40", format)
		assert.NotContains(t, out, "EDS c-039", "%s: no column per cluster", format)
	}
	var back compare.Report
	require.NoError(t, json.Unmarshal(render(t, rep, "json"), &back))
	assert.Len(t, back.Versions[1].Runs[0].Resources, 2+2*n, "the JSON lists every resource")

	text := finding(rep, "one-endpoint", "versions").Text
	assert.Contains(t, text, "A sotw moved 40 of 82 tracked versions (EDS ×40)")
	assert.Contains(t, text, "B delta moved 1 of 82 tracked versions (EDS `c-007`)")
}

// TestVersionColumns: a set that fits keeps a column per resource; a larger one folds
// the types with the most resources first, only as many as it takes; past
// MaxVersionColumns types, the last column holds the rest.
func TestVersionColumns(t *testing.T) {
	set := func(counts ...any) []compare.ResourceVersion {
		var out []compare.ResourceVersion
		for i := 0; i < len(counts); i += 2 {
			for j := range counts[i+1].(int) {
				out = append(out, compare.ResourceVersion{Type: counts[i].(string), Name: fmt.Sprintf("r%d", j)})
			}
		}
		return out
	}
	heads := func(cols []versionColumn) []string {
		var out []string
		for _, c := range cols {
			out = append(out, c.head)
		}
		return out
	}
	assert.Equal(t, []string{"LDS r0", "RDS r0", "CDS r0", "EDS r0"}, heads(versionColumns(set("LDS", 1, "RDS", 1, "CDS", 1, "EDS", 1))))
	assert.Len(t, versionColumns(set("LDS", 1, "RDS", 1, "CDS", 5, "EDS", 5)), 12, "12 resources fit")
	assert.Equal(t, []string{"LDS r0", "RDS r0", "CDS ×6", "EDS r0", "EDS r1", "EDS r2", "EDS r3", "EDS r4"},
		heads(versionColumns(set("LDS", 1, "RDS", 1, "CDS", 6, "EDS", 5))), "folding CDS alone fits")
	assert.Equal(t, []string{"LDS r0", "RDS r0", "RDS r1", "RDS r2", "CDS ×30", "EDS ×30"},
		heads(versionColumns(set("LDS", 1, "RDS", 3, "CDS", 30, "EDS", 30))), "RDS fits once CDS and EDS are folded")
	assert.Equal(t, []string{"LDS r0", "RDS ×10", "CDS ×30", "EDS ×30"}, heads(versionColumns(set("LDS", 1, "RDS", 10, "CDS", 30, "EDS", 30))))
	assert.False(t, folds(versionColumns(set("CDS", 12))))
	assert.True(t, folds(versionColumns(set("CDS", 13))))

	var many []any
	for i := range 20 {
		many = append(many, fmt.Sprintf("T%02d", i), 2)
	}
	cols := versionColumns(set(many...))
	require.Len(t, cols, compare.MaxVersionColumns)
	assert.Equal(t, "T10 ×2", cols[10].head)
	assert.Equal(t, "other ×18", cols[11].head, "types T11 to T19")
	vs := compare.VersionSet{Resources: set(many...)}
	vs.Resources[len(vs.Resources)-1].Moved = true
	assert.Equal(t, "0/18 *1: T19 r1", versionCell(vs, cols[11]).Text, "the other types' column names each by its type")
}
