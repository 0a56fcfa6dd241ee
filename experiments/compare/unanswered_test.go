package compare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/cite"
)

const (
	sdsSupersetSotw      = "testdata/sds-superset/sotw"
	sdsSupersetDelta     = "testdata/sds-superset/delta"
	sdsSupersetSotwNoADS = "testdata/sds-superset/sotw-noads"
)

// unansweredOf is the report's unanswered findings.
func unansweredOf(rep *Report) []Finding {
	var out []Finding
	for _, f := range rep.Findings {
		if f.Kind == "unanswered" {
			out = append(out, f)
		}
	}
	return out
}

// TestUnansweredSubsetIsTheADSRule: on the recorded sds-superset runs, SotW on the
// SnapshotCache never answered Envoy's SDS request for one of the snapshot's two secrets.
// Against delta on the same cache, and against SotW on the SnapshotCache without the ADS
// rule, compare says so once, in the initial step, and attributes it to go-control-plane's
// ADS rule (cite.SnapshotADSSuperset), an implementation, never to the protocol.
func TestUnansweredSubsetIsTheADSRule(t *testing.T) {
	for _, other := range []string{sdsSupersetDelta, sdsSupersetSotwNoADS} {
		t.Run(other, func(t *testing.T) {
			rep := report(t, sdsSupersetSotw, other, Options{})
			fs := unansweredOf(rep)
			require.Len(t, fs, 1, "%+v", rep.Findings)
			f := fs[0]
			assert.Equal(t, "initial", f.Step)
			assert.Contains(t, f.Text, "A sotw never answered its SDS request for `quote-cert`")
			assert.Equal(t, AttrImplementation, f.Attribution)
			assert.Equal(t, cite.Join([]cite.Source{cite.SnapshotADSSuperset}), f.Source)
			assert.Contains(t, f.Source, "pkg/cache/v3/simple.go")
			for _, g := range rep.Findings {
				assert.NotEqual(t, AttrProtocol, g.Attribution, "nothing here is the protocol's: %s", g.Text)
			}
		})
	}
	// Both answered: no such finding.
	assert.Empty(t, unansweredOf(report(t, sdsSupersetDelta, sdsSupersetSotwNoADS, Options{})))
}
