package clientview

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// The fixtures are real Envoy 1.40 runs (lab run, this package's check wired in), each
// cut at one step's checkpoint: testdata/NAME/xds.log is the log up to that step's
// client_view line (data-plane lines left out), config.json the step's
// /config_dump?include_eds with its dynamic sections only.
//   - sotw-cluster-warming: warming-order, cluster-warming (amber warms, Envoy holds its
//     CDS ACK; uniform labels);
//   - sotw-listener-in-place: warming-order, listener-update (a filter-chain-only
//     update: Envoy keeps the listener's version_info "1" with the new content);
//   - sotw-listener-nack and delta-listener-nack: an invalid listener NACKed
//     (error_state), --nack-policy hold in SotW;
//   - sotw-cp-restart: teaching, control-plane-restart (a resumed stream, server 2);
//   - delta-remove-cluster: teaching, remove-cluster;
//   - delta-does-not-exist: resource-does-not-exist, initial-fetch-timeout (ghost went
//     active without an assignment).
var fixtures = []string{"sotw-cluster-warming", "sotw-listener-in-place", "sotw-listener-nack", "delta-listener-nack",
	"sotw-cp-restart", "delta-remove-cluster", "delta-does-not-exist"}

// replay is xds.log's model of the fixture's Envoy at its checkpoint, as the runner
// builds it (clientModel): the newest stream, the published state, the label book.
func replay(t *testing.T, name string) Model {
	t.Helper()
	ev, st, err := xdslog.ReadFile(filepath.Join("testdata", name, "xds.log"))
	require.NoError(t, err)
	require.Zero(t, st.Skipped)
	book := xdslog.NewLabelBook()
	model := xdslog.NewModel(book)
	published := map[string]map[string]string{}
	for _, e := range ev {
		model.Observe(e)
		if e.Event != xdslog.EventPublish {
			continue
		}
		if !e.Incremental {
			published = map[string]map[string]string{}
		}
		for _, r := range e.Resources {
			if published[r.Type] == nil {
				published[r.Type] = map[string]string{}
			}
			published[r.Type][r.Name] = r.Hash
		}
		for _, r := range e.Deleted {
			delete(published[r.Type], r.Name)
		}
	}
	all := model.Status()
	require.NotEmpty(t, all)
	return Model{Client: ClientEnvoy, Mode: ev[0].Mode, Stream: all[len(all)-1], Published: published, Labels: book.Lookup}
}

func envoyFixture(t *testing.T, name string) []Resource {
	t.Helper()
	dump, err := os.ReadFile(filepath.Join("testdata", name, "config.json"))
	require.NoError(t, err)
	v, err := FromEnvoyConfigDump(dump)
	require.NoError(t, err)
	return v
}

func row(t *testing.T, view []Resource, typ, name string) *Resource {
	t.Helper()
	i := slices.IndexFunc(view, func(r Resource) bool { return r.Type == typ && r.Name == name })
	require.GreaterOrEqual(t, i, 0, "%s/%s in %v", typ, name, view)
	return &view[i]
}

// Every fixture's view agrees with its model: the rules hold for what real Envoy does.
func TestEnvoyFixturesAgree(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, Check(replay(t, name), envoyFixture(t, name)))
		})
	}
}

// What FromEnvoyConfigDump reads from real dumps.
func TestFromEnvoyConfigDumpReal(t *testing.T) {
	v := envoyFixture(t, "sotw-cluster-warming")
	amber := row(t, v, "CDS", "amber")
	assert.True(t, amber.Warming)
	assert.Equal(t, StatusACKED, amber.Status)
	assert.Len(t, amber.Hash, 64, "the dumped cluster's content hash")
	eds := row(t, v, "EDS", "amber")
	assert.Equal(t, Resource{Type: "EDS", Name: "amber", Status: StatusUnknown, Warming: true}, *eds,
		"a warming cluster's assignment is not dumped")
	assert.True(t, row(t, v, "EDS", "inventory").PresenceOnly)
	assert.Equal(t, StatusACKED, row(t, v, "EDS", "inventory").Status)

	m := replay(t, "sotw-listener-in-place")
	l := row(t, envoyFixture(t, "sotw-listener-in-place"), "LDS", "quote-listener")
	assert.Equal(t, "1", l.Version, "the in-place update kept the version")
	assert.Equal(t, m.Stream.Accepted["LDS"]["quote-listener"].Hash, l.Hash, "with the new content, hashed as xds.log hashes it")
	assert.Equal(t, "8", m.Stream.Accepted["LDS"]["quote-listener"].Version)

	v = envoyFixture(t, "sotw-listener-nack")
	l = row(t, v, "LDS", "quote-listener")
	assert.Equal(t, StatusNACKED, l.Status)
	assert.Equal(t, "1", l.Version, "it keeps the listener it runs")
	assert.Contains(t, l.Error, "StatPrefix: value length must be at least 1 characters")
	assert.False(t, slices.ContainsFunc(v, func(r Resource) bool { return r.Name == "" }), "the nameless error entry is left out")

	ghost := row(t, envoyFixture(t, "delta-does-not-exist"), "EDS", "ghost")
	assert.Equal(t, StatusUnknown, ghost.Status, "active without an assignment: no endpoints")
	require.NotContains(t, replay(t, "delta-does-not-exist").Stream.Accepted["EDS"], "ghost")

	_, err := FromEnvoyConfigDump([]byte("not json"))
	assert.Error(t, err)
	_, err = FromEnvoyConfigDump([]byte(`{"x":1}`))
	assert.EqualError(t, err, "config dump: no configs")
}

// Each disagreement a wrong view (or a wrong model) would show, on real fixtures.
func TestEnvoyFixturesDisagree(t *testing.T) {
	edit := func(name string, fn func([]Resource) []Resource) []Finding {
		return Check(replay(t, name), fn(envoyFixture(t, name)))
	}
	// Version mismatch: the label of an older route (route-blue), and one the client
	// never ACKed for RDS (teaching's invalid route, NACKed). Every teaching label
	// carries the same cluster, so a label moved on a cluster would rightly agree.
	got := edit("sotw-listener-in-place", func(v []Resource) []Resource { row(t, v, "RDS", "quote-route").Version = "2"; return v })
	f := one(t, got, "RDS", "quote-route")
	assert.Contains(t, f.Model, `label "2" carried content`)
	got = edit("sotw-cp-restart", func(v []Resource) []Resource { row(t, v, "RDS", "quote-route").Version = "3"; return v })
	assert.Contains(t, one(t, got, "RDS", "quote-route").Model, `label "3" is not in the label book`)
	got = edit("sotw-cp-restart", func(v []Resource) []Resource { row(t, v, "CDS", "inventory").Version = "3"; return v })
	assert.Empty(t, got)
	// Content mismatch.
	got = edit("sotw-cp-restart", func(v []Resource) []Resource { row(t, v, "RDS", "quote-route").Hash = hash('0'); return v })
	assert.Contains(t, one(t, got, "RDS", "quote-route").Model, "the client's copy is content 00000000")
	// Missing and extra.
	got = edit("delta-remove-cluster", func(v []Resource) []Resource {
		return slices.DeleteFunc(v, func(r Resource) bool { return r.Type == "RDS" })
	})
	assert.Equal(t, "nothing (absent)", one(t, got, "RDS", "quote-route").Client)
	got = edit("delta-remove-cluster", func(v []Resource) []Resource {
		return append(v, Resource{Type: "CDS", Name: "inventory", Version: hash('3'), Status: StatusACKED})
	})
	assert.Contains(t, one(t, got, "CDS", "inventory").Model, "the client holds nothing (not published)")
	// A delta version that is not the model's.
	got = edit("delta-listener-nack", func(v []Resource) []Resource { row(t, v, "CDS", "inventory").Version = hash('9'); return v })
	one(t, got, "CDS", "inventory")
	// NACK: another reason, or the rejected listener taken.
	got = edit("sotw-listener-nack", func(v []Resource) []Resource { row(t, v, "LDS", "quote-listener").Error = "other"; return v })
	assert.Contains(t, one(t, got, "LDS", "quote-listener").Model, "NACKed with")
	got = edit("sotw-listener-nack", func(v []Resource) []Resource {
		l := row(t, v, "LDS", "quote-listener")
		l.Status, l.Version, l.Hash, l.Error = StatusACKED, "2", "", ""
		return v
	})
	f = one(t, got, "LDS", "quote-listener")
	assert.True(t, strings.HasPrefix(f.Model, "ACKed version 1"), f.Model)
	// The model wrong instead: it says the listener was ACKed.
	m := replay(t, "sotw-listener-nack")
	ts := m.Stream.Types["LDS"]
	ts.State, ts.Error = xdslog.TypeSynced, ""
	m.Stream.Types["LDS"] = ts
	assert.Contains(t, one(t, Check(m, envoyFixture(t, "sotw-listener-nack")), "LDS", "quote-listener").Model, "the type is SYNCED")
	// The warming cluster is in flight only while its CDS send is unanswered.
	m = replay(t, "sotw-cluster-warming")
	require.Equal(t, xdslog.TypeStale, m.Stream.Types["CDS"].State)
	ts = m.Stream.Types["CDS"]
	ts.State = xdslog.TypeSynced
	m.Stream.Types["CDS"] = ts
	assert.Equal(t, "the client holds nothing", one(t, Check(m, envoyFixture(t, "sotw-cluster-warming")), "CDS", "amber").Model)
}
