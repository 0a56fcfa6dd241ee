package resources

import (
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/certs"
)

// testSecret is secret name with a fresh leaf (serial), or the garbage one when invalid.
func testSecret(t *testing.T, name string, serial int64, invalid bool) SecretSpec {
	t.Helper()
	ca, err := certs.NewCA("test-ca")
	require.NoError(t, err)
	l, err := ca.Issue(name, serial)
	require.NoError(t, err)
	if invalid {
		return SecretSpec{Name: name, CertPEM: certs.Garbage, KeyPEM: l.KeyPEM, Invalid: true}
	}
	return SecretSpec{Name: name, CertPEM: l.CertPEM, KeyPEM: l.KeyPEM}
}

func TestSDSType(t *testing.T) {
	t.Parallel()
	assert.Equal(t, rsrc.SecretType, SDS.URL())
	typ, ok := TypeOf(rsrc.SecretType)
	assert.True(t, ok)
	assert.Equal(t, SDS, typ)
	assert.Contains(t, Types, SDS)
}

func TestTLSListenerTakesItsCertificateFromSDSOverADS(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "1", InventoryPort: 18080, TLS: ListenerTLS{Secret: "quote-cert", InitialFetchTimeout: 1500 * time.Millisecond},
		Secrets: []SecretSpec{testSecret(t, "quote-cert", 101, false)}})
	require.Equal(t, 1, set.ByType[SDS].Len())
	assert.Equal(t, "quote-cert", set.ByType[SDS].At(0).Name)
	l, err := BuildListener(ListenerSpec{Name: "l", Port: 10443, RouteName: "r", TLS: ListenerTLS{Secret: "quote-cert", InitialFetchTimeout: 1500 * time.Millisecond}})
	require.NoError(t, err)
	names, err := ListenerSecrets(l)
	require.NoError(t, err)
	assert.Equal(t, []string{"quote-cert"}, names)
	ctx := &tlsv3.DownstreamTlsContext{}
	require.NoError(t, l.GetFilterChains()[0].GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx))
	sds := ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()[0]
	assert.NotNil(t, sds.GetSdsConfig().GetAds(), "sds_config ads")
	assert.Equal(t, 1500*time.Millisecond, sds.GetSdsConfig().GetInitialFetchTimeout().AsDuration())
	plain, err := BuildListener(ListenerSpec{Name: "l", Port: 10443, RouteName: "r"})
	require.NoError(t, err)
	names, err = ListenerSecrets(plain)
	require.NoError(t, err)
	assert.Empty(t, names)
}

func TestSecretValidation(t *testing.T) {
	t.Parallel()
	good := testSecret(t, "s", 5, false)
	_, err := BuildSecret(good)
	require.NoError(t, err)
	bad := testSecret(t, "s", 5, true)
	m, err := BuildSecret(bad)
	require.NoError(t, err, "the deliberate invalid one is built")
	assert.Error(t, Validate(m), "and fails Validate")
	bad.Invalid = false
	_, err = BuildSecret(bad)
	assert.ErrorContains(t, err, "mark it invalid")
	good.Invalid = true
	_, err = BuildSecret(good)
	assert.ErrorContains(t, err, "marked invalid but its certificate parses")
	_, err = Build(State{Version: "1", InventoryPort: 18080, Proxyless: true, TLS: ListenerTLS{Secret: "s"}})
	assert.ErrorContains(t, err, "grpc-go has no SDS")
	set, err := Build(State{Version: "1", InventoryPort: 18080, TLS: ListenerTLS{Secret: "s"}, Secrets: []SecretSpec{testSecret(t, "s", 5, true)}})
	require.NoError(t, err)
	assert.Equal(t, []string{"s"}, set.Invalid)
}
