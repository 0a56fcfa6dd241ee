package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xds-workbench/lab/experiments/cite"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// matrixFinding returns the matrix finding of kind in step that covers typ ("" for a
// kind without types).
func matrixFinding(t *testing.T, m *Matrix, step, kind, typ string) MatrixFinding {
	t.Helper()
	for _, f := range m.Findings {
		if f.Step == step && f.Kind == kind && (typ == "" || contains(f.Types, typ)) {
			return f
		}
	}
	t.Fatalf("no %s finding in %s for %q; findings: %v", kind, step, typ, findingTexts(m))
	return MatrixFinding{}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func findingTexts(m *Matrix) []string {
	var out []string
	for _, f := range m.Findings {
		out = append(out, f.Attribution+": "+f.Text)
	}
	return out
}

// TestMatrixColumns: a column per run, named by what tells the runs apart, with each
// run's own figures: the same as its two-run report, from the one accumulator.
func TestMatrixColumns(t *testing.T) {
	m := matrix(t, teaching4, Options{})
	var axes []string
	for _, r := range m.Runs {
		axes = append(axes, r.Label+": "+r.Axes)
	}
	assert.Equal(t, []string{"A: sotw · snapshot · uniform · nack resend", "B: delta · snapshot",
		"C: sotw · linear · per-type · nack hold", "D: delta · linear"}, axes)
	assert.Equal(t, []Pair{{"A vs B", "A", "B", "snapshot"}, {"C vs D", "C", "D", "linear"}}, m.Pairs)
	assert.Empty(t, m.Coverage, "both caches are covered")
	assert.Len(t, m.SharedSteps, 8)

	snap, lin := report(t, sotwRun, deltaRun, Options{}), report(t, sotwLinearRun, deltaLinearRun, Options{})
	require.Len(t, m.Rows, len(snap.Rows))
	for i, row := range m.Rows {
		require.Len(t, row.Runs, 4)
		assert.Equal(t, snap.Rows[i].Runs[0], row.Runs[0], row.Step)
		assert.Equal(t, snap.Rows[i].Runs[1], row.Runs[1], row.Step)
		assert.Equal(t, lin.Rows[i].Runs[0], row.Runs[2], row.Step)
		assert.Equal(t, lin.Rows[i].Runs[1], row.Runs[3], row.Step)
		assert.Equal(t, snap.Versions[i].Runs[0], m.Versions[i].Runs[0])
		assert.Equal(t, lin.Versions[i].Runs[1], m.Versions[i].Runs[3])
	}
	assert.Equal(t, snap.Total[0], m.Total[0])
	assert.Equal(t, lin.Total[1], m.Total[3])

	// Only the axes that differ name a column: three SotW runs that differ in the cache
	// alone get no option in their title.
	m = matrix(t, []string{scaledSotw, scaledDelta, scaledSotwLinear}, Options{})
	assert.Equal(t, "sotw · snapshot", m.Runs[0].Axes)
	assert.Equal(t, "sotw · linear", m.Runs[2].Axes)
}

// TestMatrixProtocolAndImplementation: in the 4-run teaching matrix the removal holds
// with both caches (the protocol), while the re-sends at the port change come from the
// SnapshotCache with uniform labels and vanish with the LinearCache (an implementation,
// naming both caches' code).
func TestMatrixProtocolAndImplementation(t *testing.T) {
	m := matrix(t, teaching4, Options{})

	rm := matrixFinding(t, m, "remove-cluster", "removal", "")
	assert.Equal(t, AttrProtocol, rm.Attribution)
	assert.Equal(t, cite.SpecDeleting.String(), rm.Source)
	assert.Equal(t, "the same in every pair, with the SnapshotCache (A vs B) and the LinearCache (C vs D), with the simulated client", rm.Basis)
	assert.Equal(t, "remove-cluster, removal. Every pair, A vs B (snapshot), C vs D (linear): sotw removed [inventory] by absence; delta removed [inventory] explicitly", rm.Text)
	require.Len(t, rm.Pairs, 2)
	assert.Equal(t, "remove-cluster: A sotw removed `inventory` by absence (CDS); B delta removed `inventory` explicitly (CDS, EDS)", rm.Pairs[0].Finding)
	assert.Equal(t, "remove-cluster: C sotw removed `inventory` by absence (CDS); D delta removed `inventory` explicitly (CDS, EDS)", rm.Pairs[1].Finding)

	pc := matrixFinding(t, m, "port-change", "redundant", "LDS")
	assert.Equal(t, AttrImplementation, pc.Attribution)
	assert.Equal(t, []string{"LDS", "RDS", "CDS"}, pc.Types, "the three unchanged types, stated together")
	assert.Equal(t, "the cache, --sotw-versions and --nack-policy differ between A vs B (snapshot) and C vs D (linear), and either may change it; all are implementation choices", pc.Basis)
	for _, src := range []string{cite.CacheAxis.String(), cite.SnapshotOnlyOptions.String(), "--sotw-versions uniform (shared/publish, Publisher.Publish)"} {
		assert.Contains(t, pc.Source, src)
	}
	assert.Equal(t, "sotw re-sent unchanged LDS, RDS, CDS, delta did not", pc.Pairs[0].Shape)
	assert.Equal(t, "neither re-sent unchanged LDS, RDS, CDS", pc.Pairs[1].Shape)
	assert.Empty(t, pc.Pairs[1].Finding, "the linear pair has no such finding")

	// The NACK: a storm with the SnapshotCache and resend, one NACK with the LinearCache.
	nack := matrixFinding(t, m, "invalid-route", "nack", "")
	assert.Equal(t, AttrImplementation, nack.Attribution)
	assert.Equal(t, "sotw NACKed RDS and re-sent the rejected content; delta NACKed RDS and did not re-send it", nack.Pairs[0].Shape)
	assert.Equal(t, "sotw NACKed RDS and did not re-send it; delta NACKed RDS and did not re-send it", nack.Pairs[1].Shape)
	assert.Contains(t, nack.Source, cite.LinearNack.String())
	assert.Contains(t, nack.Source, cite.SnapshotNack.String())

	// The same with both caches but the servers' choice: the restart re-send.
	re := matrixFinding(t, m, "control-plane-restart", "redundant", "LDS")
	assert.Equal(t, AttrImplementation, re.Attribution)
	assert.True(t, strings.HasPrefix(re.Basis, "the same in every pair"), re.Basis)
	assert.Contains(t, re.Basis, "so not the cache's")
	assert.Contains(t, re.Source, cite.SnapshotNewStream.String())
	assert.Contains(t, re.Source, cite.LinearNewStream.String())

	for _, f := range m.Findings {
		assert.Contains(t, []string{AttrProtocol, AttrImplementation}, f.Attribution, f.Text)
		assert.NotEmpty(t, f.Source, f.Text)
		if f.Attribution == AttrProtocol {
			assert.True(t, strings.HasPrefix(f.Source, `xDS protocol, "`), "a protocol finding cites the protocol: %s", f.Source)
		}
	}
	assert.Contains(t, m.Summary, "SotW and delta pairs with the same cache: A vs B (snapshot), C vs D (linear).")
}

// TestMatrixCacheAlone: in the scaled matrix only the cache differs between the pairs.
// The data shows what go-control-plane v0.14.0 does: a SotW EDS response of the
// SnapshotCache carries every assignment of the subscription (pkg/cache/v3/simple.go,
// createResponse), of the LinearCache only the changed one (linear.go, computeResponse),
// while CDS carries every cluster with both (full state). So re-sent endpoints are the
// SnapshotCache's, re-sent clusters the protocol's.
func TestMatrixCacheAlone(t *testing.T) {
	runs := loadRuns(t, scaled4)
	sends := func(r *Run, step, typ string) (n int) {
		for _, e := range r.Events {
			if e.Step == step && e.Type == typ && e.Event == "send" {
				n = len(e.Resources)
			}
		}
		return n
	}
	assert.Equal(t, 3, sends(runs[0], "one-endpoint", "EDS"), "SnapshotCache: the whole EDS subscription")
	assert.Equal(t, 1, sends(runs[2], "one-endpoint", "EDS"), "LinearCache: the changed assignment")
	assert.Equal(t, 4, sends(runs[0], "add-cluster", "CDS"), "SnapshotCache: every cluster")
	assert.Equal(t, 4, sends(runs[2], "add-cluster", "CDS"), "LinearCache: every cluster too (full state)")

	m, err := CompareMatrix(runs, Options{})
	require.NoError(t, err)
	eds := matrixFinding(t, m, "one-endpoint", "redundant", "EDS")
	assert.Equal(t, AttrImplementation, eds.Attribution)
	assert.Equal(t, "the cache changes it: A vs B (snapshot) and C vs D (linear) differ in the cache alone", eds.Basis)
	assert.Contains(t, eds.Source, cite.CacheAxis.String())
	assert.Contains(t, eds.Source, cite.SnapshotWholeType.String())
	assert.NotContains(t, eds.Source, cite.SnapshotOnlyOptions.String(), "no uniform or resend run here")

	cds := matrixFinding(t, m, "add-cluster", "redundant", "CDS")
	assert.Equal(t, AttrProtocol, cds.Attribution)
	assert.Equal(t, []string{"CDS"}, cds.Types)
	assert.Equal(t, cite.SpecGrouping.String(), cds.Source)
	assert.Equal(t, "sotw re-sent unchanged CDS, delta did not", cds.Pairs[1].Shape)
	// The same response step re-sent unchanged endpoints too, but only the SnapshotCache.
	assert.Equal(t, AttrImplementation, matrixFinding(t, m, "add-cluster", "redundant", "EDS").Attribution)
	// A CDS response that leaves a cluster out carries the rest: the full state again.
	assert.Equal(t, AttrProtocol, matrixFinding(t, m, "remove-cluster", "redundant", "CDS").Attribution)
	assert.Equal(t, AttrProtocol, matrixFinding(t, m, "remove-cluster", "removal", "").Attribution)
}

// TestMatrixOptionVersusCache: with SotW per-type/hold under both caches beside the
// uniform/resend run, the port-change re-sends come out as the options' (same cache,
// different options), not the cache's (the per-type pairs agree across caches).
func TestMatrixOptionVersusCache(t *testing.T) {
	m := matrix(t, []string{sotwRun, deltaRun, sotwHoldRun, sotwLinearRun, deltaLinearRun}, Options{})
	assert.Equal(t, "sotw · snapshot · per-type · nack hold", m.Runs[2].Axes)
	require.Len(t, m.Pairs, 3)
	pc := matrixFinding(t, m, "port-change", "redundant", "LDS")
	assert.Equal(t, AttrImplementation, pc.Attribution)
	assert.Equal(t, "--sotw-versions and --nack-policy change it with the same cache: A vs B (snapshot) and C vs B (snapshot) differ; "+
		"the cache does not: C vs B (snapshot) and D vs E (linear) agree", pc.Basis)
	assert.NotContains(t, pc.Source, cite.CacheAxis.String(), "the cache is not what changes it")
	assert.Equal(t, AttrProtocol, matrixFinding(t, m, "remove-cluster", "removal", "").Attribution)
}

// TestMatrixUnattributed: without both caches no label is guessed: each finding says in
// one line why, and so does the summary.
func TestMatrixUnattributed(t *testing.T) {
	m := matrix(t, []string{sotwRun, deltaRun, sotwHoldRun}, Options{})
	assert.Equal(t, "only snapshot runs given", m.Coverage)
	require.NotEmpty(t, m.Findings)
	for _, f := range m.Findings {
		assert.Equal(t, AttrUnattributed, f.Attribution, f.Text)
		assert.Equal(t, "only snapshot runs given", f.Basis)
		assert.Empty(t, f.Source)
	}
	assert.Contains(t, m.Summary, "cannot be decided: only snapshot runs given")

	m = matrix(t, []string{sotwLinearRun, deltaLinearRun, sotwHoldRun}, Options{})
	assert.Equal(t, "no SotW and delta pair with the snapshot cache given", m.Coverage)

	// A run without run.json has no known cache: it is shown, never paired.
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(deltaLinearRun, "xds.log"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "xds.log"), data, 0o644))
	m = matrix(t, []string{sotwRun, deltaRun, sotwLinearRun, dir}, Options{})
	assert.Equal(t, "delta · no run.json", m.Runs[3].Axes)
	assert.Equal(t, "no SotW and delta pair with the linear cache given (the cache of D is unknown: no run.json)", m.Coverage)
}

// TestMatrixTiming: two pairs run with the same options that still differ show timing,
// not a choice: unattributed, naming them.
func TestMatrixTiming(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"xds.log", "envoy.result"} {
		data, err := os.ReadFile(filepath.Join(sotwHoldRun, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	// The per-type run relabelled uniform/resend: the options say it is run A again.
	meta, err := os.ReadFile(filepath.Join(sotwHoldRun, "run.json"))
	require.NoError(t, err)
	meta = bytes.Replace(bytes.Replace(meta, []byte(`"per-type"`), []byte(`"uniform"`), 1), []byte(`"hold"`), []byte(`"resend"`), 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), meta, 0o644))
	m := matrix(t, []string{sotwRun, deltaRun, dir, sotwLinearRun, deltaLinearRun}, Options{})
	pc := matrixFinding(t, m, "port-change", "redundant", "LDS")
	assert.Equal(t, AttrUnattributed, pc.Attribution)
	assert.Equal(t, "A vs B and C vs B were run with the same options and still differ (timing), so whose behaviour it is cannot be told", pc.Basis)
	// What every pair shows alike is still decided.
	assert.Equal(t, AttrProtocol, matrixFinding(t, m, "remove-cluster", "removal", "").Attribution)
}

// TestMatrixSharedSteps: runs of different scenarios are compared on the steps all of
// them have; each run's header names the rest.
func TestMatrixSharedSteps(t *testing.T) {
	m := matrix(t, []string{sotwRun, deltaRun, scaledSotwLinear, scaledDeltaLinear}, Options{})
	assert.Equal(t, []string{"initial", "remove-cluster"}, m.SharedSteps)
	assert.Equal(t, []string{"port-change", "invalid-route", "recover", "envoy-restart", "control-plane-restart", "restore"}, m.Runs[0].OnlyHere)
	assert.Equal(t, []string{"one-endpoint", "add-cluster"}, m.Runs[2].OnlyHere)
	for _, f := range m.Findings {
		assert.Contains(t, m.SharedSteps, f.Step)
	}

	_, err := CompareMatrix(loadRuns(t, teaching4), Options{Step: "warp"})
	require.EqualError(t, err, `step "warp" is not in every run (shared steps: initial, port-change, invalid-route, recover, envoy-restart, control-plane-restart, remove-cluster, restore)`)
	_, err = CompareMatrix(loadRuns(t, teaching4[:1]), Options{})
	require.EqualError(t, err, "want two or more runs, got 1")
}

// TestMatrixStep: --step narrows every section to the step and adds one diagram per run
// (render: TestMatrixStepDiagrams).
func TestMatrixStep(t *testing.T) {
	m := matrix(t, teaching4, Options{Step: "remove-cluster"})
	require.Len(t, m.Rows, 1)
	require.Len(t, m.Diagrams, 4)
	for i, d := range m.Diagrams {
		assert.Equal(t, RunLabel(i), d.Run)
	}
	for _, f := range m.Findings {
		assert.Equal(t, "remove-cluster", f.Step)
	}
}

// TestLinearAttribution: the two-run findings of LinearCache runs name the LinearCache's
// code, never the SnapshotCache's.
func TestLinearAttribution(t *testing.T) {
	rep := report(t, sotwLinearRun, deltaLinearRun, Options{})
	for _, k := range []struct {
		step, kind string
		source     []string
	}{
		{"invalid-route", "nack", []string{cite.LinearNack.String(), cite.DeltaSent.String()}},
		{"recover", "redundant", []string{cite.LinearReturned.String(), cite.DeltaSent.String()}},
		{"recover", "versions", []string{cite.LinearSotwVersions.String(), cite.LinearDeltaVersions.String()}},
		{"control-plane-restart", "reconnect", []string{cite.LinearNewStream.String(), cite.LinearDeltaInitial.String()}},
		{"control-plane-restart", "redundant", []string{cite.LinearNewStream.String()}},
	} {
		f := finding(rep, k.step, k.kind)
		require.NotEmpty(t, f.Text, "no %s finding in %s", k.kind, k.step)
		assert.Equal(t, AttrImplementation, f.Attribution, f.Text)
		for _, src := range k.source {
			assert.Contains(t, f.Source, src, "%s %s", k.step, k.kind)
		}
	}
	for _, f := range rep.Findings {
		assert.NotContains(t, f.Source, "SnapshotCache", f.Text)
		assert.NotContains(t, f.Source, "simple.go", f.Text)
	}
}

// A protocol label must hold under every cache and client the compare includes: a run
// whose cache or client is in no SotW/delta pair leaves the difference unchecked there,
// so what every pair shows alike is not attributed, and the basis names the run.
// Implementation verdicts stand.
func TestMatrixProtocolNeedsEveryCacheAndClient(t *testing.T) {
	meta := func(cache, client string) *Meta { return &Meta{Cache: cache, Client: client} }
	runs := []*Run{
		{Label: "A", Mode: "sotw", Meta: meta("snapshot", "envoy")},
		{Label: "B", Mode: "delta", Meta: meta("snapshot", "envoy")},
		{Label: "C", Mode: "sotw", Meta: meta("linear", "envoy")},
		{Label: "D", Mode: "delta", Meta: meta("linear", "envoy")},
	}
	pairs := []pairRef{
		{Pair: Pair{Name: "A vs B", Cache: "snapshot"}, sotw: axesOf(runs[0]), delta: axesOf(runs[1])},
		{Pair: Pair{Name: "C vs D", Cache: "linear"}, sotw: axesOf(runs[2]), delta: axesOf(runs[3])},
	}
	assert.Empty(t, uncheckedAxes(runs, pairs))
	more := append(slices.Clone(runs), &Run{Label: "E", Mode: "delta", Meta: meta("indexed", "simulated")})
	unchecked := uncheckedAxes(more, pairs)
	assert.Equal(t, "no SotW and delta pair ran with the indexed cache (E) and the simulated client (E), so it was not seen to hold there", unchecked)

	alike := []pairFacet{
		{pair: pairs[0], present: true, shape: "s", attr: protocolVerdict(cite.SpecDeleting)},
		{pair: pairs[1], present: true, shape: "s", attr: protocolVerdict(cite.SpecDeleting)},
	}
	v := attributeAcrossCaches(alike, "", "")
	assert.Equal(t, AttrProtocol, v.attr)
	assert.Equal(t, "the same in every pair, with the SnapshotCache (A vs B) and the LinearCache (C vs D), with Envoy", v.basis)
	v = attributeAcrossCaches(alike, "", unchecked)
	assert.Equal(t, AttrUnattributed, v.attr)
	assert.Contains(t, v.basis, "but no SotW and delta pair ran with the indexed cache (E)")

	impl := []pairFacet{
		{pair: pairs[0], present: true, shape: "s", attr: implementation(cite.SnapshotNewStream)},
		{pair: pairs[1], present: true, shape: "s", attr: implementation(cite.LinearNewStream)},
	}
	assert.Equal(t, AttrImplementation, attributeAcrossCaches(impl, "", unchecked).attr)

	// A pair whose own report could not attribute it leaves the matrix unable to, too.
	odd := slices.Clone(alike)
	odd[1].attr = unattributed("not attributed: no component recorded for it")
	v = attributeAcrossCaches(odd, "", "")
	assert.Equal(t, AttrUnattributed, v.attr)
	assert.Contains(t, v.basis, "C vs D's own report could not attribute it")
}
