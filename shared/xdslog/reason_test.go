package xdslog

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
)

// envoyRouteNack is the error_detail Envoy 1.40 sends for the workbench's invalid route
// (docs/samples/lab-20261201T091954Z/sotw/xds.log, before the marker was dropped).
const envoyRouteNack = "goo.gle/debugonly    \nname: \"quote-route\"\nvirtual_hosts {\n  name: \"quote\"\n  domains: \"*\"\n  routes {\n    match {\n    }\n    route {\n      cluster: \"inventory\"\n    }\n    name: \"inventory\"\n  }\n}\n: Proto constraint validation failed (RouteConfigurationValidationError.VirtualHosts[0]: embedded message failed validation | caused by VirtualHostValidationError.Routes[0]: embedded message failed validation | caused by RouteValidationError.Match: embedded message failed validation | caused by field: \"path_specifier\", reason: is required)"

func TestNackReason(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{envoyRouteNack, `field: "path_specifier", reason: is required`},
		{"goo.gle/debugonly \nname: \"x\"\n: Proto constraint validation failed (X: value must be positive)", "Proto constraint validation failed (X: value must be positive)"},
		{"path_specifier is required", "path_specifier is required"},
		{"Unknown gRPC client cluster 'inventory'", "Unknown gRPC client cluster 'inventory'"},
		{"", ""},
	} {
		assert.Equal(t, c.want, NackReason(c.in), "%q", c.in)
	}
}

func TestCleanError(t *testing.T) {
	t.Parallel()
	got := CleanError(envoyRouteNack)
	assert.True(t, len(got) > 0 && got[0] == 'n', "starts with the resource: %q", got[:20])
	assert.NotContains(t, got, "goo.gle")
	assert.Equal(t, "plain", CleanError("plain"))
	// Envoy 1.40 also writes the marker as goo.gle/debugproto (seen in a real run).
	assert.Equal(t, "name: \"quote-route\"\n: bad", CleanError("goo.gle/debugproto  \nname: \"quote-route\"\n: bad"))
}

// TestTypeStatus: the latest send decides a type's state: unanswered is STALE (with its
// nonce), rejected is NACKED (with the error, the client still runs the ACKed version,
// also while the same content is re-sent), ACKed is SYNCED; a type asked for and never
// sent is NOT SENT.
func TestTypeStatus(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := NewRecorder(&buf, protocol.SotW)
	r.StreamOpen(1, "127.0.0.1:5000")
	r.SotW(1, "RDS", SotWRequest{Names: []string{"quote-route"}, Node: "n1"})
	r.SotW(1, "CDS", SotWRequest{})
	state := func(typ string) TypeStatus { return r.Status()[0].Types[typ] }
	assert.Equal(t, TypeStatus{State: TypeNotSent, Wildcard: true}, state("CDS"), "a SotW request without names: a wildcard")

	r.Send(1, "RDS", "1", "1", res("quote-route", "good"), nil, 100)
	ts := state("RDS")
	assert.Equal(t, TypeStale, ts.State)
	assert.Equal(t, "1", ts.Nonce)
	require.NotNil(t, ts.Since)
	r.Feedback(1, "RDS", Feedback{Nonce: "1", ClientVersion: "1"})
	assert.Equal(t, TypeStatus{State: TypeSynced, Version: "1", SentVersion: "1", Names: []string{"quote-route"}}, state("RDS"),
		"the subscription is the names of the latest request")

	r.Send(1, "RDS", "2", "2", res("quote-route", "bad"), nil, 100)
	r.Feedback(1, "RDS", Feedback{Nonce: "2", ClientVersion: "1", Error: msg(envoyRouteNack)})
	ts = state("RDS")
	assert.Equal(t, TypeNacked, ts.State)
	assert.Equal(t, "1", ts.Version, "the client runs the version it ACKed")
	assert.Equal(t, "2", ts.SentVersion)
	assert.NotContains(t, ts.Error, "goo.gle", "the stored error has no debug marker")
	r.Send(1, "RDS", "3", "2", res("quote-route", "bad"), nil, 100)
	assert.Equal(t, TypeNacked, state("RDS").State, "the rejected content re-sent is still NACKED")

	st := r.Status()[0]
	assert.Equal(t, "n1", st.Node)
	assert.Equal(t, "127.0.0.1:5000", st.Peer)
}
