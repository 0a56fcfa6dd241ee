package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// finding returns the text of the first finding of kind in step ("" when none).
func finding(rep *Report, step, kind string) Finding {
	for _, f := range rep.Findings {
		if f.Step == step && f.Kind == kind {
			return f
		}
	}
	return Finding{}
}

func row(t *testing.T, rep *Report, step string) Row {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Step == step {
			return r
		}
	}
	t.Fatalf("no row %s", step)
	return Row{}
}

// TestFindings: the findings of the committed pair state what the data shows, with the
// figures from the rows.
func TestFindings(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})

	pc := row(t, rep, "port-change")
	assert.Equal(t, map[string]int{"EDS": 1}, pc.Runs[1].Responses, "delta sends only the changed type")
	assert.Equal(t, 3, pc.Runs[0].Redundant, "uniform SotW re-sends the three unchanged types")
	assert.Equal(t, fmt.Sprintf("port-change: A sotw re-sent 3 unchanged resources (%d bytes) among 4 resources in 4 responses (%d bytes); B delta sent 1 resource in 1 response (%d bytes), none unchanged",
		pc.Runs[0].RedundantBytes, pc.Runs[0].Bytes, pc.Runs[1].Bytes), finding(rep, "port-change", "redundant").Text)
	assert.Equal(t, "port-change: A sotw moved 4 of 4 tracked versions (LDS, RDS, CDS, EDS); B delta moved 1 of 4 tracked versions (EDS)",
		finding(rep, "port-change", "versions").Text)

	ir := row(t, rep, "invalid-route")
	require.GreaterOrEqual(t, ir.Runs[0].RejectedResends, 2)
	nack := finding(rep, "invalid-route", "nack").Text
	assert.Contains(t, nack, fmt.Sprintf("A sotw re-sent the rejected RDS content %d times (NACK storm: %d NACKs, %.0f NACKs/s)",
		ir.Runs[0].RejectedResends, ir.Runs[0].Nacks, ir.Runs[0].NackRate))
	assert.Contains(t, nack, "B delta got 1 NACK (RDS) and re-sent the rejected content 0 times")

	// recover publishes the valid route again, and the endpoint back on v1 (as lab run
	// does): delta re-sends the route the client never stopped running.
	rc := row(t, rep, "recover")
	assert.Equal(t, map[string]int{"RDS": 1, "EDS": 1}, rc.Runs[1].Responses)
	assert.Equal(t, 1, rc.Runs[1].Redundant, "delta took the rejected route as delivered")
	assert.Equal(t, "200 v1 SIMULATED", rc.Runs[1].DataPlane.Text)

	assert.Equal(t, "remove-cluster: A sotw removed `inventory` by absence (CDS); B delta removed `inventory` explicitly (CDS, EDS)",
		finding(rep, "remove-cluster", "removal").Text)
	assert.Empty(t, finding(rep, "initial", "versions").Text, "both runs move every version at the start: nothing to state")
	assert.Empty(t, finding(rep, "port-change", "dataplane").Text, "both data planes agree")

	total := rep.Findings[len(rep.Findings)-1]
	assert.Equal(t, "total", total.Kind)
	assert.Contains(t, total.Text, "bytes A/B = "+words.Ratio(rep.Total[0].Bytes, rep.Total[1].Bytes))
	assert.Contains(t, total.Text, fmt.Sprintf("the largest difference is in invalid-route (A %d bytes, B %d bytes), see its nack finding",
		ir.Runs[0].Bytes, ir.Runs[1].Bytes))

	// Versions: SotW moves every version together, delta only what changed.
	for _, cp := range rep.Versions {
		if cp.Step == "port-change" {
			assert.Equal(t, 4, cp.Runs[0].Moved)
			assert.Equal(t, 1, cp.Runs[1].Moved)
			assert.Regexp(t, "^[0-9a-f]{64}$", cp.Runs[1].Resources[3].Version, "delta versions are full hashes in the report")
		}
	}
	// Simulated answers are labelled as such, everywhere.
	for _, r := range rep.Rows {
		for _, f := range r.Runs {
			require.NotNil(t, f.DataPlane, r.Step)
			assert.True(t, f.DataPlane.Simulated)
			assert.Contains(t, f.DataPlane.Text, "SIMULATED")
		}
	}
}

// TestRestartFindings: the reconnect findings say what each control plane sent on the
// new stream and what the client declared.
func TestRestartFindings(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})
	cp := finding(rep, "control-plane-restart", "reconnect").Text
	assert.Contains(t, cp, "control-plane-restart: after the control plane restarted (server 2), A sotw sent 4 responses with 4 resources")
	assert.Contains(t, cp, "4 of them what the client already ran (the client resumed from version_info 4)")
	assert.Contains(t, cp, "B delta sent 2 responses without resources")
	assert.Contains(t, cp, "(the client sent 4 initial_resource_versions)")
	// The simulated client keeps what it accepted across the runner's restart of it, so
	// envoy-restart is a reconnect with state, like the control-plane restart.
	assert.Contains(t, finding(rep, "envoy-restart", "reconnect").Text, "envoy-restart: after the client reconnected, A sotw sent 4 responses with 4 resources")
}

// TestFindingAttribution: every finding the teaching scenario produces, in both committed
// comparisons, says protocol or implementation and where; the known ones say the right
// one, in every format.
func TestFindingAttribution(t *testing.T) {
	reps := map[string]*Report{
		"sotw vs delta":               report(t, sotwRun, deltaRun, Options{}),
		"sotw per-type hold vs delta": report(t, sotwHoldRun, deltaRun, Options{}),
	}
	for name, rep := range reps {
		require.NotEmpty(t, rep.Findings, name)
		for _, f := range rep.Findings {
			assert.Contains(t, []string{AttrProtocol, AttrImplementation}, f.Attribution, "%s: %s", name, f.Text)
			assert.NotEmpty(t, f.Source, "%s: %s", name, f.Text)
			assert.NoError(t, checkSources(f.verdict.srcs, f.Attribution == AttrProtocol), "%s: %s", name, f.Text)
			assert.Empty(t, cite.CheckText(f.Source), "%s: %s", name, f.Source)
			if f.Attribution == AttrProtocol {
				assert.True(t, strings.HasPrefix(f.Source, `xDS protocol, "`), "%s: a protocol finding cites the protocol: %s", name, f.Source)
				assert.Equal(t, "A sotw, snapshot cache, the simulated client; B delta, snapshot cache, the simulated client", f.ObservedWith)
			}
		}
	}
	known := []struct {
		rep, step, kind, attr string
		source                []string
	}{
		// 1. Whole-type responses: uniform labels re-send unchanged types (not the protocol).
		{"sotw vs delta", "port-change", "redundant", AttrImplementation, []string{"--sotw-versions uniform", "respondSOTWWatches"}},
		{"sotw vs delta", "port-change", "versions", AttrImplementation, []string{"--sotw-versions uniform", "ConstructVersionMap"}},
		// 2. The restart re-send is the SnapshotCache answering a new stream.
		{"sotw vs delta", "control-plane-restart", "reconnect", AttrImplementation, []string{"pkg/cache/v3/simple.go, CreateWatch) answers every new stream", "initial_resource_versions"}},
		{"sotw vs delta", "control-plane-restart", "redundant", AttrImplementation, []string{"answers every new stream"}},
		// 3. Delta's "never re-sends rejected content" is its server; its cost is at recover.
		{"sotw vs delta", "recover", "redundant", AttrImplementation, []string{"pkg/server/delta/v3/server.go, processDelta) records versions when it sends and never reads error_detail"}},
		// 7. The NACK loop: the SnapshotCache answering a NACK's version_info at once, and
		// Envoy's rate limit (unset) would throttle it.
		{"sotw vs delta", "invalid-route", "nack", AttrImplementation, []string{"pkg/cache/v3/simple.go, CreateWatch) answers a NACK's version_info", "rate_limit_settings", "never reads error_detail"}},
		{"sotw per-type hold vs delta", "invalid-route", "nack", AttrImplementation, []string{"--nack-policy hold", "never reads error_detail"}},
		{"sotw per-type hold vs delta", "control-plane-restart", "versions", AttrImplementation, []string{"--sotw-versions per-type"}},
		// Removal by absence vs removed_resources is the protocol.
		{"sotw vs delta", "remove-cluster", "removal", AttrProtocol, []string{`xDS protocol, "Deleting Resources"`}},
		{"sotw per-type hold vs delta", "remove-cluster", "removal", AttrProtocol, []string{`xDS protocol, "Deleting Resources"`}},
		// The SotW server skips a stale request, subscription change and all.
		{"sotw vs delta", "remove-cluster", "stale", AttrImplementation, []string{"pkg/server/sotw/v3/ads.go, processADS", `xDS protocol, "Resource updates"`}},
		// The total is as much protocol as the step that makes most of it: the storm.
		{"sotw vs delta", "", "total", AttrImplementation, []string{"answers a NACK's version_info"}},
	}
	for _, k := range known {
		f := finding(reps[k.rep], k.step, k.kind)
		require.NotEmpty(t, f.Text, "%s: no %s finding in %s", k.rep, k.kind, k.step)
		assert.Equal(t, k.attr, f.Attribution, "%s: %s", k.rep, f.Text)
		for _, src := range k.source {
			assert.Contains(t, f.Source, src, "%s: %s %s", k.rep, k.step, k.kind)
		}
	}

}

// TestHeadline: the report opens with what differed most, computed from the totals, and
// whose behaviour that is.
func TestHeadline(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})
	h := rep.Headline
	// The storm: NACKs are the largest ratio (delta got exactly one).
	assert.Equal(t, metricNacks, h.Metric)
	assert.Equal(t, [2]int{rep.Total[0].Nacks, rep.Total[1].Nacks}, h.Values)
	require.NotNil(t, h.Ratio)
	assert.InDelta(t, float64(rep.Total[0].Nacks)/float64(rep.Total[1].Nacks), *h.Ratio, 1e-9)
	for _, other := range []float64{
		float64(rep.Total[0].Bytes) / float64(rep.Total[1].Bytes),
		float64(sumMap(rep.Total[0].Responses)) / float64(sumMap(rep.Total[1].Responses)),
	} {
		assert.Greater(t, *h.Ratio, other, "the headline's ratio is the largest")
	}
	assert.Equal(t, "invalid-route", h.Step)
	assert.Equal(t, AttrImplementation, h.Attribution)
	assert.Equal(t, cite.SnapshotNack.String()+"; "+cite.EnvoyRateLimit.String(), h.Source, "the headline cites the side that made the difference")
	assert.True(t, strings.HasPrefix(h.Text, fmt.Sprintf("NACKs differed most: A sotw got %d, B delta 1 (%s×). Most of the difference is in invalid-route",
		rep.Total[0].Nacks, words.Ratio(rep.Total[0].Nacks, 1))), h.Text)

	// Per-type labels and hold leave the control-plane restart, where the SnapshotCache
	// answers the new stream with all four resources and delta with none.
	holdRep := report(t, sotwHoldRun, deltaRun, Options{})
	hold := holdRep.Headline
	require.NotNil(t, hold.Ratio)
	for _, other := range []float64{
		float64(holdRep.Total[0].Bytes) / float64(holdRep.Total[1].Bytes),
		float64(holdRep.Total[1].Bytes) / float64(holdRep.Total[0].Bytes),
		float64(sumMap(holdRep.Total[0].Responses)) / float64(sumMap(holdRep.Total[1].Responses)),
	} {
		assert.GreaterOrEqual(t, *hold.Ratio, other, "the headline's ratio is the largest")
	}
	assert.Equal(t, "control-plane-restart", hold.Step)
	assert.Equal(t, AttrImplementation, hold.Attribution)
	assert.Equal(t, cite.SnapshotNewStream.String(), hold.Source)

	// A run against itself: nothing differs, and the headline says so.
	a, err := Load("A", sotwRun)
	require.NoError(t, err)
	b, err := Load("B", sotwRun)
	require.NoError(t, err)
	same, err := Compare(a, b, Options{})
	require.NoError(t, err)
	assert.Empty(t, same.Headline.Metric)
	assert.Contains(t, same.Headline.Text, "No total differs")

}

// TestLoadErrors: every bad input gives one line naming the run.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	good, err := os.ReadFile(filepath.Join(sotwRun, "xds.log"))
	require.NoError(t, err)
	write("badmeta/xds.log", string(good))
	write("badmeta/run.json", `{"mode":"grpc"}`)
	write("mismatch/xds.log", string(good))
	write("mismatch/run.json", `{"mode":"delta"}`)
	write("badresult/xds.log", string(good))
	write("badresult/envoy.result", "maybe\nlater")
	write("nolog/other.txt", "")
	mixed := strings.Replace(string(good), `"mode":"sotw"`, `"mode":"delta"`, 1)
	for path, want := range map[string]string{
		filepath.Join(dir, "missing"):                                  "no such file or directory",
		filepath.Join(dir, "nolog"):                                    "directory has no xds.log",
		write("empty.log", ""):                                         "xds.log is empty",
		write("half.log", `{"ts":"2026-01-01T00:00:00Z","event":"pub`): "no valid event (1 lines skipped; first: line 1: unexpected end of JSON input)",
		write("grpc.log", `{"ts":"2026-01-01T00:00:00Z","event":"publish","mode":"grpc","step":"initial"}`): `unknown mode "grpc"`,
		write("mixed.log", mixed):       `xds.log mixes modes "delta" and "sotw"`,
		filepath.Join(dir, "badmeta"):   `run.json: unknown mode "grpc" (want sotw or delta)`,
		filepath.Join(dir, "mismatch"):  `run.json says mode "delta" but xds.log was recorded in "sotw"`,
		filepath.Join(dir, "badresult"): `envoy.result: want PASS, FAIL: reason or NOT_RUN, got "maybe\nlater"`,
	} {
		_, err := Load("B", path)
		require.Error(t, err, path)
		assert.Contains(t, err.Error(), want)
		assert.True(t, strings.HasPrefix(err.Error(), "run B ("+path+"): "), err.Error())
		assert.NotContains(t, err.Error(), "\n")
	}
}
