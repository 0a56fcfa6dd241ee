package compare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
)

// Two runs of one protocol cannot differ by it: a delta-vs-delta (and a SotW-vs-SotW)
// compare has no protocol finding and no protocol headline, whatever differs between
// the runs. The pairs differ in their cache, so there is plenty to explain.
func TestSameProtocolHasNoProtocolFinding(t *testing.T) {
	for name, pair := range map[string][2]string{
		"delta vs delta":        {deltaRun, deltaLinearRun},
		"sotw vs sotw":          {sotwRun, sotwLinearRun},
		"sotw vs sotw (hold)":   {sotwHoldRun, sotwRun},
		"delta vs delta (load)": {loadDeltaRun, deltaRun},
	} {
		rep := report(t, pair[0], pair[1], Options{})
		require.NotEmpty(t, rep.Findings, name)
		assert.NotEqual(t, AttrProtocol, rep.Headline.Attribution, "%s: %s", name, rep.Headline.Text)
		assert.NotContains(t, rep.Headline.Text, "That is the protocol", name)
		for _, f := range rep.Findings {
			assert.NotEqual(t, AttrProtocol, f.Attribution, "%s: %s", name, f.Text)
			if f.Attribution == AttrUnattributed {
				assert.Contains(t, f.Source, "not attributed", "%s: an unattributed finding says so: %s", name, f.Text)
			}
		}
	}
	// The removal that is the protocol's between SotW and delta is not between two delta runs.
	rep := report(t, deltaRun, deltaLinearRun, Options{})
	for _, f := range rep.Findings {
		if f.Kind == "removal" {
			assert.Equal(t, AttrUnattributed, f.Attribution)
			assert.Contains(t, f.Source, "both runs speak delta")
			assert.Contains(t, f.Source, "they differ in the cache (snapshot, linear), which may make it")
			assert.Contains(t, f.Source, `xDS protocol, "Deleting Resources"`, "the rule at play is still named")
		}
	}
}

// The one rule (settle) refuses a protocol label without a real section: a planted wrong
// citation, a protocol verdict citing only a component, and one citing nothing.
func TestSettleRefusesUncitedProtocol(t *testing.T) {
	runs := [2]*Run{{Mode: "sotw", Label: "A"}, {Mode: "delta", Label: "B"}}
	good := protocolVerdict(cite.SpecDeleting).settle(runs)
	assert.Equal(t, AttrProtocol, good.attr)

	planted := cite.Source{Kind: cite.Protocol, Section: "Reconnect", Says: "delta resumes from initial_resource_versions"}
	for name, a := range map[string]attribution{
		"planted section": protocolVerdict(planted),
		"component only":  protocolVerdict(cite.SnapshotNack),
		"nothing":         protocolVerdict(),
		"impl, nothing":   {attr: AttrImplementation},
	} {
		got := a.settle(runs)
		assert.Equal(t, AttrUnattributed, got.attr, name)
		assert.Contains(t, got.source(), "not attributed", name)
	}
	assert.Contains(t, protocolVerdict(planted).settle(runs).source(), `"Reconnect"`)
	assert.ErrorIs(t, checkSources([]cite.Source{cite.SnapshotNack}, true), errNoSpec)
}

// No label by default: a difference no finding explains is stated with its figures and
// not attributed, in the headline and in the total.
func TestNoAttributionByDefault(t *testing.T) {
	rows := []Row{{Step: "initial", Runs: [2]Figures{{Bytes: 4416}, {Bytes: 4496}}}}
	ex := explain(nil, rows, metricBytes)
	assert.Equal(t, "initial", ex.step)
	assert.Equal(t, AttrUnattributed, ex.attr.attr)
	assert.Contains(t, ex.attr.source(), "4416 vs 4496")

	runs := [2]*Run{{Mode: "delta", Label: "A"}, {Mode: "delta", Label: "B"}}
	rep := &Report{Rows: rows, Total: [2]Figures{{Bytes: 4416}, {Bytes: 4496}}}
	rep.Headline = headline(runs, rep)
	assert.Equal(t, AttrUnattributed, rep.Headline.Attribution)
	assert.Contains(t, rep.Headline.Text, "Not attributed: no finding of initial explains its bytes (4416 vs 4496).")
	total, ok := totalFinding(runs, rep, 1, nil)
	require.True(t, ok)
	assert.Equal(t, AttrUnattributed, total.Attribution)

	// Equal in every step: the total is not the protocol's either.
	rep.Rows[0].Runs[1].Bytes = 4416
	total, ok = totalFinding(runs, rep, 1, nil)
	require.True(t, ok)
	assert.Equal(t, AttrUnattributed, total.Attribution)
	assert.Contains(t, total.Source, "no compared step differs")

	// The events before the first step are a step too (named ""): a difference there is
	// found, not taken for "no step differs".
	rep.Rows = []Row{{Step: "", Runs: [2]Figures{{Bytes: 4213}, {Bytes: 5487}}}}
	total, ok = totalFinding(runs, rep, 1, nil)
	require.True(t, ok)
	assert.Contains(t, total.Text, "the largest difference is in "+words.Step(""))
	assert.Contains(t, total.Source, "no finding of "+words.Step("")+" explains its bytes (4213 vs 5487)")
}

// A finding explains a difference only where it concerns the larger side: the SotW run's
// one redundant resource does not explain why the delta run sent more bytes.
func TestExplainNeedsTheLargerSide(t *testing.T) {
	rows := []Row{{Step: "initial", Runs: [2]Figures{{Bytes: 4213, Counts: analysis.Counts{Redundant: 1}}, {Bytes: 5487}}}}
	fs := []Finding{newFinding("initial", "redundant", "A re-sent 1", protocolVerdict(cite.SpecGrouping))}
	ex := explain(fs, rows, metricBytes)
	assert.Empty(t, ex.kind)
	assert.Equal(t, AttrUnattributed, ex.attr.attr)

	rows[0].Runs = [2]Figures{{Bytes: 6000, Counts: analysis.Counts{Redundant: 1}}, {Bytes: 5487}}
	ex = explain(fs, rows, metricBytes)
	assert.Equal(t, "redundant", ex.kind)
	assert.Equal(t, AttrProtocol, ex.attr.attr)
}
