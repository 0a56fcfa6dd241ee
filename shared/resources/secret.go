package resources

import (
	"errors"
	"fmt"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-workbench/lab/shared/certs"
)

// Secrets as one more resource shape (SDS). A TLS listener names its certificate; Envoy
// fetches it by that name over the ADS stream, one subscription per (sds_config, name),
// never a wildcard (Envoy source/common/secret/sds_api.cc, SdsApi::SdsApi and
// SdsApi::initialize: subscription_->start({sds_config_name_})). The xDS protocol lists
// the type under "Resource Types" and its services under "RPC Services and Methods for
// Each Variant" (SecretDiscoveryService.StreamSecrets / DeltaSecrets).

// ListenerTLS makes a listener terminate TLS with the certificate of one SDS secret.
type ListenerTLS struct {
	// Secret is the name of the Secret whose tls_certificate the listener presents.
	Secret string
	// InitialFetchTimeout bounds how long the listener warms waiting for the secret
	// (Envoy's ConfigSource.initial_fetch_timeout, 15s when 0). After it the listener
	// goes active without a certificate and resets every handshake
	// (server_ssl_socket_factory.downstream_context_secrets_not_ready).
	InitialFetchTimeout time.Duration
}

// SecretSpec is one SDS Secret holding a TLS certificate and its key, inline.
type SecretSpec struct {
	Name    string
	CertPEM []byte
	KeyPEM  []byte
	// Invalid marks the deliberately invalid one: its certificate does not parse, it is
	// published anyway so that the client's NACK can be seen.
	Invalid bool
}

// ProxylessNoSDS is why a proxyless (grpc-go) client cannot run a TLS listener from
// SDS: grpc-go v1.85.0 has no Secret resource type (internal/xds/xdsclient/xdsresource
// has only the listener, route, cluster and endpoints types) and NACKs a
// tls_certificate_sds_secret_configs (xdsresource/unmarshal_cds.go,
// securityConfigFromCommonTLSContextUsingNewFields: "unsupported field
// tls_certificate_sds_secret_configs"); its certificates come from certificate-provider
// instances only.
const ProxylessNoSDS = "grpc-go has no SDS: no Secret resource type, and it NACKs tls_certificate_sds_secret_configs (xdsresource/unmarshal_cds.go, securityConfigFromCommonTLSContextUsingNewFields); its certificates come from certificate providers"

// BuildSecret builds the Secret s describes. A secret not marked invalid must hold a
// certificate and key that parse and match; one marked invalid must not.
func BuildSecret(s SecretSpec) (*tlsv3.Secret, error) {
	if s.Name == "" {
		return nil, errors.New("secret: empty name")
	}
	m := &tlsv3.Secret{Name: s.Name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: s.CertPEM}},
		PrivateKey:       &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: s.KeyPEM}},
	}}}
	err := checkSecret(m)
	switch {
	case err != nil && !s.Invalid:
		return nil, fmt.Errorf("secret %q: %w (mark it invalid to publish it on purpose)", s.Name, err)
	case err == nil && s.Invalid:
		return nil, fmt.Errorf("secret %q is marked invalid but its certificate parses", s.Name)
	}
	return m, nil
}

// checkSecret is what Envoy checks when a TLS certificate secret arrives: the chain
// and key parse and match (Envoy creates the server context in the update callbacks,
// ServerSslSocketFactory::onAddOrUpdateSecret, and a failure there is a NACK).
func checkSecret(m *tlsv3.Secret) error {
	tc := m.GetTlsCertificate()
	if tc == nil {
		return fmt.Errorf("secret %q: no tls_certificate", m.GetName())
	}
	return certs.Check(tc.GetCertificateChain().GetInlineBytes(), tc.GetPrivateKey().GetInlineBytes())
}

// downstreamTLS is the listener's transport socket: a DownstreamTlsContext whose
// certificate comes from SDS over ADS, by name (tls_certificate_sds_secret_configs
// with sds_config ads).
func downstreamTLS(t ListenerTLS) (*core.TransportSocket, error) {
	src := adsSource()
	if t.InitialFetchTimeout > 0 {
		src.InitialFetchTimeout = durationpb.New(t.InitialFetchTimeout)
	}
	ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: t.Secret, SdsConfig: src}},
	}}
	if err := ctx.ValidateAll(); err != nil {
		return nil, fmt.Errorf("downstream tls context: %w", err)
	}
	packed, err := deterministicAny(ctx)
	if err != nil {
		return nil, fmt.Errorf("pack downstream tls context: %w", err)
	}
	return &core.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: packed}}, nil
}

// ListenerSecrets names the SDS secrets a listener's filter chains take their
// certificates from, in order (none for a plain listener).
func ListenerSecrets(l *listener.Listener) ([]string, error) {
	var out []string
	for _, fc := range l.GetFilterChains() {
		ts := fc.GetTransportSocket().GetTypedConfig()
		if ts == nil {
			continue
		}
		ctx := &tlsv3.DownstreamTlsContext{}
		if err := ts.UnmarshalTo(ctx); err != nil {
			return nil, fmt.Errorf("listener %s: transport socket: %w", l.GetName(), err)
		}
		for _, c := range ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
			out = append(out, c.GetName())
		}
	}
	return out, nil
}
