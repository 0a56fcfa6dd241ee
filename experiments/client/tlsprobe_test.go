package client

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/certs"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/scenario"
)

// tlsServer serves HTTPS on loopback with leaf (cn, serial) of ca.
func tlsServer(t *testing.T, ca *certs.CA, cn string, serial int64) *httptest.Server {
	t.Helper()
	l, err := ca.Issue(cn, serial)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestTLSProbeNamesTheCertificateAndKeepsTheHeldConnection(t *testing.T) {
	ca, err := certs.NewCA("probe-ca")
	require.NoError(t, err)
	srv := tlsServer(t, ca, "quote-v1", 101)
	p := newTLSProber(ca.Pool())
	addr := srv.Listener.Addr().String()
	ctx := context.Background()

	o := p.probe(ctx, addr, scenario.Request{Path: "/quote", TLS: true}, "r1")
	require.Empty(t, o.Error)
	assert.Equal(t, 200, o.Status)
	assert.Equal(t, "101", o.CertSerial)
	assert.Equal(t, "quote-v1", o.CertCN)
	assert.Equal(t, scenario.HandshakeOK, o.Handshake)

	h1 := p.probe(ctx, addr, scenario.Request{Path: "/quote", TLS: true, Held: true}, "h1")
	h2 := p.probe(ctx, addr, scenario.Request{Path: "/quote", TLS: true, Held: true}, "h2")
	assert.Equal(t, 1, h1.Held)
	assert.False(t, h1.Reused)
	assert.Equal(t, 2, h2.Held)
	assert.True(t, h2.Reused, "the held connection is kept alive")
	assert.Equal(t, h1.Conn, h2.Conn)
	assert.Equal(t, "101", h2.CertSerial)
}

func TestTLSProbeTellsResetFromRefused(t *testing.T) {
	ca, err := certs.NewCA("probe-ca")
	require.NoError(t, err)
	p := newTLSProber(ca.Pool())
	ctx := context.Background()

	port, err := loopback.FreePort()
	require.NoError(t, err)
	o := p.probe(ctx, loopback.Addr(port), scenario.Request{Path: "/", TLS: true}, "r")
	assert.Equal(t, scenario.HandshakeRefused, o.Handshake, o.Error)

	// A listener that closes every connection unread, as Envoy's NotReadySslSocket does.
	lis, err := net.Listen("tcp", loopback.Addr(0))
	require.NoError(t, err)
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	o = p.probe(ctx, lis.Addr().String(), scenario.Request{Path: "/", TLS: true}, "r")
	assert.Equal(t, scenario.HandshakeReset, o.Handshake, o.Error)
	assert.Equal(t, 0, o.Status)

	other, err := certs.NewCA("other-ca")
	require.NoError(t, err)
	srv := tlsServer(t, other, "x", 5)
	o = p.probe(ctx, srv.Listener.Addr().String(), scenario.Request{Path: "/", TLS: true}, "r")
	assert.Equal(t, scenario.HandshakeFailed, o.Handshake, o.Error)
}
