package compare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixtures are real runs, trimmed (testdata/clients/README.md): the teaching steps
// initial..control-plane-restart with Envoy and with grpc-go, and resource-does-not-exist.
const (
	envoyClientRun = "testdata/clients/envoy"
	grpcClientRun  = "testdata/clients/grpc"
	envoyDNERun    = "testdata/clients/envoy-dne"
	grpcDNERun     = "testdata/clients/grpc-dne"
)

// difference finds the one difference of topic, step and type.
func difference(t *testing.T, c *Clients, topic, step, typ string) ClientDifference {
	t.Helper()
	var found []ClientDifference
	for _, d := range c.Differences {
		if d.Topic == topic && d.Step == step && d.Type == typ {
			found = append(found, d)
		}
	}
	require.Len(t, found, 1, "difference %s %s %s in %+v", topic, step, typ, c.Differences)
	return found[0]
}

func noDifference(t *testing.T, c *Clients, topic, step, typ string) {
	t.Helper()
	for _, d := range c.Differences {
		assert.False(t, d.Topic == topic && d.Step == step && d.Type == typ, "unexpected %+v", d)
	}
}

func TestClientsEnvoyAgainstGRPC(t *testing.T) {
	c := report(t, envoyClientRun, grpcClientRun, Options{}).Clients
	require.NotNil(t, c)
	assert.Equal(t, [2]string{"Envoy", "grpc-go"}, c.Names)

	// Envoy subscribes LDS and CDS wildcard, grpc-go by name: an implementation choice the
	// protocol allows; RDS and EDS both by name, so no difference.
	for _, typ := range []string{"LDS", "CDS"} {
		d := difference(t, c, "subscription", "", typ)
		assert.Equal(t, "wildcard (no names)", d.Runs[0])
		assert.Contains(t, d.Runs[1], "names ")
		assert.Equal(t, AttrImplementation, d.Attribution)
		assert.Contains(t, d.Source, "A Envoy (source/common/listener_manager/lds_api.cc")
		assert.Contains(t, d.Source, "B grpc-go (internal/xds/clients/xdsclient/ads_stream.go, adsStreamImpl.subscribe) keeps one watch per name")
		ack := difference(t, c, "ack-names", "", typ)
		assert.Equal(t, AttrImplementation, ack.Attribution)
		assert.Contains(t, ack.Source, "grpc_mux_impl.cc")
	}
	assert.Equal(t, "names quote-listener", difference(t, c, "subscription", "", "LDS").Runs[1])
	noDifference(t, c, "subscription", "", "RDS")
	noDifference(t, c, "subscription", "", "EDS")

	// Both NACK the route without a path specifier and keep version 2: the protocol.
	nack := difference(t, c, "nack", "invalid-route", "RDS")
	assert.True(t, nack.Same)
	assert.Equal(t, AttrProtocol, nack.Attribution)
	assert.Equal(t, `NACKed version "3" and kept version "2"`, nack.Runs[0])
	assert.Contains(t, nack.Source, `xDS protocol, "ACK and NACK semantics summary"`)

	// What each says it kept, in its own view: Envoy's config dump the route as ACKED at
	// the version that last changed its content, grpc-go's CSDS NACKED at the last good one.
	view := difference(t, c, "nack-view", "invalid-route", "RDS")
	assert.Equal(t, AttrImplementation, view.Attribution)
	assert.Equal(t, "invalid-route-config.json says RDS quote-route ACKED at version 1", view.Runs[0])
	assert.Equal(t, "invalid-route-csds.json says RDS quote-route NACKED at version 2", view.Runs[1])
	assert.Contains(t, view.Source, "rds_route_config_subscription.cc")
	assert.Contains(t, view.Source, "authority.go")

	// Their reasons are each client's own validation.
	reason := difference(t, c, "nack-reason", "invalid-route", "RDS")
	assert.False(t, reason.Same)
	assert.Equal(t, AttrImplementation, reason.Attribution)
	assert.Contains(t, reason.Runs[0], `field: "path_specifier", reason: is required`)
	assert.Contains(t, reason.Runs[1], "doesn't have a path specifier")
	assert.Contains(t, reason.Source, "MessageUtil::validate")
	assert.Contains(t, reason.Source, "unmarshal_rds.go")

	// How often each NACKs the resent version is the server's policy and each client.
	rate := difference(t, c, "nack-rate", "invalid-route", "RDS")
	assert.Equal(t, AttrImplementation, rate.Attribution)
	assert.Regexp(t, `^12 NACKs, \d+/s$`, rate.Runs[0])
	assert.Regexp(t, `^9 NACKs, \d+/s$`, rate.Runs[1])
	assert.Contains(t, rate.Source, "--nack-policy")

	// A reconnect re-sends version 4 for every type; the names differ for LDS and CDS.
	lds := difference(t, c, "reconnect", "control-plane-restart", "LDS")
	assert.Equal(t, AttrImplementation, lds.Attribution)
	assert.Equal(t, `resumes with version_info "4", wildcard (no names)`, lds.Runs[0])
	assert.Equal(t, `resumes with version_info "4", names quote-listener`, lds.Runs[1])
	assert.Contains(t, lds.Source, "sendExisting")
	rds := difference(t, c, "reconnect", "control-plane-restart", "RDS")
	assert.True(t, rds.Same)
	assert.Equal(t, AttrProtocol, rds.Attribution)
	assert.Equal(t, `resumes with version_info "4", names quote-route`, rds.Runs[0])

	// When each reconnected to the restarted server is each client's backoff.
	delay := difference(t, c, "reconnect-delay", "control-plane-restart", "")
	assert.Equal(t, AttrImplementation, delay.Attribution)
	assert.Equal(t, "opened its stream 0.35 s after the restarted server's first event", delay.Runs[0])
	assert.Equal(t, "opened its stream 2.69 s after the restarted server's first event", delay.Runs[1])
	assert.Contains(t, delay.Source, "grpc_stream.h")
	assert.Contains(t, delay.Source, "backoff.DefaultConfig")

	// Neither run subscribed a name that does not exist.
	for _, d := range c.Differences {
		assert.NotEqual(t, "does-not-exist", d.Topic)
	}
}

// With grpc-go as A, each side's source follows its label.
func TestClientsSidesFollowTheLabels(t *testing.T) {
	c := report(t, grpcClientRun, envoyClientRun, Options{}).Clients
	require.NotNil(t, c)
	assert.Equal(t, [2]string{"grpc-go", "Envoy"}, c.Names)
	d := difference(t, c, "subscription", "", "LDS")
	assert.Equal(t, [2]string{"names quote-listener", "wildcard (no names)"}, d.Runs)
	assert.Regexp(t, `^A grpc-go \(.*; B Envoy \(`, d.Source)
}

func TestClientsDoesNotExist(t *testing.T) {
	c := report(t, envoyDNERun, grpcDNERun, Options{}).Clients
	require.NotNil(t, c)
	d := difference(t, c, "does-not-exist", "subscribe-missing", "")
	assert.Equal(t, AttrImplementation, d.Attribution)
	assert.Contains(t, d.Runs[0], "subscribed EDS ghost")
	assert.Contains(t, d.Runs[0], "404 ×1")
	assert.Contains(t, d.Runs[1], "503 ×3, no response ×2")
	assert.Contains(t, d.Runs[1], "subscribe-missing-csds.json says EDS ghost DOES_NOT_EXIST")
	assert.Contains(t, d.Runs[0], "subscribe-missing-config.json says EDS ghost UNKNOWN")
	assert.Contains(t, d.Source, "A Envoy (source/extensions/config_subscription/grpc/grpc_subscription_impl.cc, GrpcSubscriptionImpl::start) initial_fetch_timeout")
	assert.Contains(t, d.Source, "B grpc-go (internal/xds/clients/xdsclient/ads_stream.go, adsStreamImpl.startWatchTimersLocked) reports a watch not answered within defaultWatchExpiryTimeout (xdsclient.go), 15 s")
	assert.Contains(t, d.Source, "Knowing When a Requested Resource Does Not Exist")
}

// The section is only for two different, known clients (render: every format shows it then).
func TestClientsSectionOnlyForDifferentClients(t *testing.T) {
	assert.Nil(t, report(t, envoyClientRun, envoyClientRun, Options{}).Clients)
	assert.Nil(t, report(t, sotwRun, deltaRun, Options{}).Clients)

}
