package envoy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersion(t *testing.T) {
	out := "\n/x/envoy  version: 9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0/Clean/RELEASE/BoringSSL\n"
	line, v, err := ParseVersion(out)
	require.NoError(t, err)
	assert.Equal(t, "1.40.0", v)
	assert.Equal(t, "/x/envoy  version: 9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0/Clean/RELEASE/BoringSSL", line)

	_, v, err = ParseVersion("envoy  version: abc/1.41.0-dev/Modified/DEBUG/BoringSSL")
	require.NoError(t, err)
	assert.Equal(t, "1.41.0-dev", v)

	_, _, err = ParseVersion("Usage: envoy [options]")
	assert.ErrorContains(t, err, "no version")
}

func TestParseStats(t *testing.T) {
	body := []byte(`cluster_manager.cds.version_text: "v7"
listener_manager.lds.version_text: ""
cluster_manager.cds.update_attempt: 6
control_plane.connected_state: 0
cluster_manager.cds.update_duration: No recorded values
garbage
`)
	s := ParseStats(body)
	assert.Equal(t, "v7", s["cluster_manager.cds.version_text"])
	v, ok := s["listener_manager.lds.version_text"]
	assert.True(t, ok, "empty text readout must still be listed")
	assert.Equal(t, "", v)
	assert.Equal(t, "6", s["cluster_manager.cds.update_attempt"])
	assert.Equal(t, "No recorded values", s["cluster_manager.cds.update_duration"])
	assert.Len(t, s, 5)
}

func TestParseAccessLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	content := "2026-11-29T16:31:28.599Z req-1 /quote?sku=paper 200 - via_upstream 127.0.0.1:18080 inventory\n" +
		"2026-11-29T16:31:29.000Z - /nope 404 NR route_not_found - -\n" +
		"2026-11-29T16:31:30.000Z id with spaces /quote 503 UH no_healthy_upstream - inventory\n" +
		"2026-11-29T16:31:31.000Z req-1 /quote?sku=pen 503 NC cluster_not_found - -\n" +
		"2026-11-29T16:31:32.000Z req-partial /quote 2" // still being written
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))

	entries, err := ParseAccessLog(path)
	require.NoError(t, err)
	require.Len(t, entries, 4)
	assert.Equal(t, AccessEntry{
		Time: "2026-11-29T16:31:28.599Z", RequestID: "req-1", Path: "/quote?sku=paper", Code: 200,
		Details: "via_upstream", UpstreamHost: "127.0.0.1:18080", UpstreamCluster: "inventory",
		Raw: "2026-11-29T16:31:28.599Z req-1 /quote?sku=paper 200 - via_upstream 127.0.0.1:18080 inventory",
	}, entries[0])
	assert.Equal(t, "", entries[1].RequestID)
	assert.Equal(t, "NR", entries[1].Flags)
	assert.Equal(t, "", entries[1].UpstreamCluster)
	assert.Equal(t, "id with spaces", entries[2].RequestID)
	assert.Equal(t, 503, entries[2].Code)

	// A reused ID finds the latest line.
	e, ok, err := FindAccess(path, "req-1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "NC", e.Flags)

	_, ok, err = FindAccess(path, "req-partial")
	require.NoError(t, err)
	assert.False(t, ok, "an unterminated line is not parsed yet")

	_, _, err = FindAccess(path, "")
	assert.Error(t, err)

	missing, err := ParseAccessLog(filepath.Join(t.TempDir(), "none.log"))
	require.NoError(t, err)
	assert.Empty(t, missing)

	bad := filepath.Join(t.TempDir(), "bad.log")
	require.NoError(t, os.WriteFile(bad, []byte("too few fields\n"), 0o644))
	_, err = ParseAccessLog(bad)
	assert.ErrorContains(t, err, "line 1")

	badCode := filepath.Join(t.TempDir(), "badcode.log")
	require.NoError(t, os.WriteFile(badCode, []byte("t id /p abc - - - -\n"), 0o644))
	_, err = ParseAccessLog(badCode)
	assert.ErrorContains(t, err, "response code")
}
