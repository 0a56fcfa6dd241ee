package compare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
)

// protoDiff finds a protocol difference by key.
func protoDiff(t *testing.T, ds []ProtocolDifference, key string) ProtocolDifference {
	t.Helper()
	for _, d := range ds {
		if d.Key == key {
			return d
		}
	}
	t.Fatalf("no protocol difference %q in %v", key, ds)
	return ProtocolDifference{}
}

// TestProtocolDifferences: the teaching pair's protocol differences are computed from
// its runs, each citing a section of the protocol document, and every format has them
// (render: JSON as protocol_differences).
func TestProtocolDifferences(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})
	require.Len(t, rep.ProtocolDifferences, len(properties))
	for _, d := range rep.ProtocolDifferences {
		assert.NoError(t, d.src.Check(), d.Key)
		assert.Equal(t, cite.Protocol, d.src.Kind, d.Key)
		assert.Equal(t, d.src.String(), d.Source)
	}
	rm := protoDiff(t, rep.ProtocolDifferences, "removal")
	assert.Equal(t, "remove-cluster: removed `inventory` by absence (CDS); RDS and EDS have no removal: a parent stops naming them", rm.SotW)
	assert.Equal(t, "remove-cluster: removed `inventory` explicitly (CDS, EDS) in removed_resources", rm.Delta)
	assert.Equal(t, "A vs B (snapshot, simulated client)", rm.ObservedWith)
	re := protoDiff(t, rep.ProtocolDifferences, "reconnect")
	assert.Contains(t, re.SotW, "control-plane-restart: each type's first request carried version_info 4")
	assert.Contains(t, re.Delta, "4 initial_resource_versions entries")
	ack := protoDiff(t, rep.ProtocolDifferences, "ack")
	assert.Contains(t, ack.SotW, "most at once: RDS 1, EDS 1")
	ver := protoDiff(t, rep.ProtocolDifferences, "versions")
	assert.Contains(t, ver.SotW, "LDS 6, RDS 6, CDS 6, EDS 6")
	assert.Contains(t, ver.Delta, "inventory 8cd26284")
	// One resource per type: the runs cannot show a full-state type's size, and say so.
	ch := protoDiff(t, rep.ProtocolDifferences, "change")
	assert.Contains(t, ch.SotW, "the runs cannot show it")
	assert.Empty(t, ch.ObservedWith)
	od := protoDiff(t, rep.ProtocolDifferences, "on-demand")
	assert.Contains(t, od.SotW, "not exercised in these runs")
}

// TestConfigurationDifferences: what the configuration adds names each option and
// component once, with the steps whose findings it explains, and never a protocol
// section.
func TestConfigurationDifferences(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})
	var uniform *ConfigDifference
	for i, c := range rep.ConfigDifferences {
		assert.NotEqual(t, string(cite.Protocol), c.Kind, c.Who)
		if c.src == cite.UniformLabels {
			uniform = &rep.ConfigDifferences[i]
		}
	}
	require.NotNil(t, uniform, "--sotw-versions uniform is what this configuration adds")
	assert.Equal(t, "--sotw-versions uniform", uniform.Who)
	assert.Equal(t, []string{"port-change", "invalid-route", "recover", "remove-cluster", "restore"}, uniform.Steps)
	assert.Equal(t, "shared/publish, Publisher.Publish", uniform.Where)
}

// TestProtocolDifferencesAtScale: with a scale sweep, the change row shows what a cluster
// add sent at the sweep's largest N: every cluster in SotW under both caches, one in
// delta, observed with the sweep's client; the matrix observes the other rows in every
// pair.
func TestProtocolDifferencesAtScale(t *testing.T) {
	scale := scaleFixture(t)
	m := matrix(t, teaching4, Options{Scale: scale})
	ch := protoDiff(t, m.ProtocolDifferences, "change")
	assert.Equal(t, "a cluster add at N = 100 (scale sweep): 101 clusters in CDS, "+
		words.Bytes(scale.point("cluster-add", "sotw", "snapshot", 100).Bytes)+" (snapshot), "+
		words.Bytes(scale.point("cluster-add", "sotw", "linear", 100).Bytes)+" (linear) in all", ch.SotW)
	assert.Equal(t, "a cluster add at N = 100 (scale sweep): 1 cluster in CDS, "+
		words.Bytes(scale.point("cluster-add", "delta", "snapshot", 100).Bytes)+" in all", ch.Delta)
	assert.Equal(t, "the scale sweep (simulated client)", ch.ObservedWith)
	rm := protoDiff(t, m.ProtocolDifferences, "removal")
	assert.Equal(t, "A vs B (snapshot, simulated client); C vs D (linear, simulated client)", rm.ObservedWith)
}
