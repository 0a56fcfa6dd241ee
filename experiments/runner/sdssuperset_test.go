package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// assertSDSSuperset: Envoy's Secret request names quote-cert alone, a subset of the
// snapshot's two secrets (its SdsApi subscribes by name). Only SotW on the SnapshotCache
// with the ADS rule leaves it unanswered: no SDS send in any step, and the handshakes
// are refused, then reset. Every other run sends quote-cert and never spare-cert.
func assertSDSSuperset(t *testing.T, mode protocol.Mode, cache publish.Cache, ev []xdslog.Event, cps map[string]Checkpoint) {
	t.Helper()
	reqs := eventsOf(ev, "initial", xdslog.EventRequest, "SDS")
	require.NotEmpty(t, reqs, "Envoy asked for its secret")
	for _, r := range reqs {
		names := r.Names
		if mode == protocol.Delta {
			names = r.Added
		}
		assert.NotContains(t, names, "spare-cert", "no listener asks for spare-cert")
	}
	var sends []xdslog.Event
	for _, step := range []string{"initial", "fetch-timeout"} {
		sends = append(sends, eventsOf(ev, step, xdslog.EventSend, "SDS")...)
	}
	require.NotNil(t, cps["initial"].Request)
	require.NotNil(t, cps["fetch-timeout"].Request)
	if mode == protocol.SotW && cache == publish.SnapshotCache {
		assert.Empty(t, sends, "the SnapshotCache's ADS rule never answers a subset")
		assert.Equal(t, scenario.HandshakeRefused, cps["initial"].Request.Handshake, "port closed while warming")
		assert.Equal(t, scenario.HandshakeReset, cps["fetch-timeout"].Request.Handshake, "active without a certificate")
		return
	}
	require.NotEmpty(t, sends, "the subset is answered")
	for _, s := range sends {
		for _, r := range s.Resources {
			assert.Equal(t, "quote-cert", r.Name, "only the secret asked for")
		}
	}
	assert.Equal(t, "101", cps["initial"].Request.CertSerial)
	assert.Equal(t, "101", cps["fetch-timeout"].Request.CertSerial)
}

// TestSDSSupersetNoADS runs sds-superset against real Envoy on the SnapshotCache without
// the ADS rule (TestPackEnvoy runs the pack on the other caches): in SotW the subset is
// answered, in delta as before.
func TestSDSSupersetNoADS(t *testing.T) {
	envoytest.Require(t)
	sc, err := scenario.Builtin("sds-superset")
	require.NoError(t, err)
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			assertPackRun(t, sc, Options{Mode: mode, Cache: publish.SnapshotCacheNoADS, Client: ClientEnvoy}, "PASS")
		})
	}
}
