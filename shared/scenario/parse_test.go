package scenario

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden error files")

// TestBadFilesGolden: every bad file is refused with one line naming file:line and what
// is wrong; testdata/bad/NAME.err holds the expected line (go test -update rewrites them).
func TestBadFilesGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			_, err := ParseFile(f)
			require.Error(t, err)
			got := err.Error()
			assert.NotContains(t, got, "\n", "one line")
			assert.True(t, strings.HasPrefix(got, f+":"), "names the file: %s", got)
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got+"\n"), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "golden file (go test ./shared/scenario -run TestBadFilesGolden -update)")
			assert.Equal(t, strings.TrimSpace(string(want)), got)
		})
	}
}

// TestPackParses: every built-in scenario parses, names itself, starts with a publish, and
// every step says what it proves.
func TestPackParses(t *testing.T) {
	pack, err := Pack()
	require.NoError(t, err)
	require.Len(t, pack, len(PackNames()))
	for _, sc := range pack {
		assert.NotEmpty(t, sc.Description, sc.Name)
		assert.NotEmpty(t, sc.Sources, sc.Name)
		assert.Equal(t, Publish, sc.Steps[0].Action, sc.Name)
		for _, st := range sc.Steps {
			assert.NotEmpty(t, st.Proves, "%s/%s", sc.Name, st.Name)
		}
	}
	wo, err := Builtin("warming-order")
	require.NoError(t, err)
	assert.Contains(t, wo.NotFor["grpc"], "gRFC A74", "not_for gives the reason in one line")
}

// TestShortAndFullFormsAgree: a short-form cluster and the same cluster in Envoy's v3
// form (with a placeholder port) build byte-identical resources.
func TestShortAndFullFormsAgree(t *testing.T) {
	sc, err := Parse("forms.yaml", []byte(`
name: forms
description: one cluster twice
backends: [v1]
resources:
  short:
    cluster: {name: inventory, backends: [v1]}
  full-cluster:
    cds:
      name: inventory
      type: EDS
      connect_timeout: 1s
      lb_policy: ROUND_ROBIN
      eds_cluster_config:
        service_name: inventory
        eds_config: {ads: {}, resource_api_version: V3}
  full-endpoints:
    eds: {"cluster_name": "inventory", "endpoints": [{"locality": {}, "load_balancing_weight": 1, "lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": "${backend.v1.port}"}}}}]}]}
steps:
  - name: initial
    publish: {upsert: [short]}
`))
	require.NoError(t, err)
	env := Env{Backends: map[string]int{"v1": 18080}}
	short, full := NewDesired(sc), NewDesired(sc)
	_, err = short.Apply(Change{Upsert: []string{"short"}})
	require.NoError(t, err)
	_, err = full.Apply(Change{Upsert: []string{"full-cluster", "full-endpoints"}})
	require.NoError(t, err)
	a, err := short.Set("1", env)
	require.NoError(t, err)
	b, err := full.Set("1", env)
	require.NoError(t, err)
	for _, typ := range []string{"CDS", "EDS"} {
		assert.Equal(t, a.Hashes(typeOf(typ)), b.Hashes(typeOf(typ)), typ)
		assert.Len(t, a.Hashes(typeOf(typ)), 1)
	}
}

// TestDocsExampleParses: the complete example in docs/scenarios.md is a valid file.
func TestDocsExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenarios.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	require.True(t, ok, "docs/scenarios.md has a yaml block")
	example, _, ok := strings.Cut(rest, "\n```")
	require.True(t, ok)
	sc, err := Parse("docs/scenarios.md", []byte(example))
	require.NoError(t, err)
	assert.Equal(t, "canary-split", sc.Name)
}
