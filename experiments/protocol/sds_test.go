package protocol

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/certs"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// tlsState is the teaching state with a TLS listener taking secret "quote-cert" from
// SDS, plus an unreferenced secret "other-cert" when both.
func tlsState(t *testing.T, version string, both bool) resources.State {
	t.Helper()
	ca, err := certs.NewCA("protocol-test-ca")
	require.NoError(t, err)
	s := resources.State{Version: version, InventoryPort: portV1, TLS: resources.ListenerTLS{Secret: "quote-cert"}}
	names := []string{"quote-cert"}
	if both {
		names = append(names, "other-cert")
	}
	for i, n := range names {
		l, err := ca.Issue(n, int64(101+i))
		require.NoError(t, err)
		s.Secrets = append(s.Secrets, resources.SecretSpec{Name: n, CertPEM: l.CertPEM, KeyPEM: l.KeyPEM})
	}
	return s
}

// recvWithin is the next response's resource count, or ok false when none came within d.
func recvWithin(g *garbageStream, d time.Duration) (n int, ok bool, err error) {
	type got struct {
		n   int
		err error
	}
	ch := make(chan got, 1)
	go func() {
		_, _, n, err := g.recv()
		ch <- got{n, err}
	}()
	select {
	case r := <-ch:
		return r.n, true, r.err
	case <-time.After(d):
		return 0, false, nil
	}
}

// Every cache serves the Secret type in both protocols: a request by name (Envoy's SDS
// subscription is never a wildcard: sds_api.cc, SdsApi::initialize) is answered with that
// secret, recorded as SDS in xds.log.
func TestEveryCacheServesTheSecret(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			h := newHarness(t, v)
			h.publish("tls", tlsState(t, "1", false))
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			g := h.rawStream(ctx)
			require.NoError(t, g.send(resources.SDS.URL(), []string{"quote-cert"}, "", ""))
			n, ok, err := recvWithin(g, wait)
			require.True(t, ok, "a Secret response")
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			h.waitLog("the SDS send", func(ev []xdslog.Event) bool {
				return len(filter(ev, ofType("tls", xdslog.EventSend, "SDS"))) >= 1
			})
		})
	}
}

// The SnapshotCache in ADS mode never answers a SotW request for a subset of the
// snapshot's secrets (go-control-plane pkg/cache/v3/simple.go, respond: "for ADS, the
// request names must match the snapshot names ... the watch is never responded"); the
// LinearCache, the indexed cache and every delta path answer it. This is why a scenario
// whose snapshot holds a secret no listener references cannot run on the SotW
// SnapshotCache.
func TestSotWSnapshotCacheStallsOnASubsetOfSecrets(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			h := newHarness(t, v)
			h.publish("tls", tlsState(t, "1", true))
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			g := h.rawStream(ctx)
			require.NoError(t, g.send(resources.SDS.URL(), []string{"quote-cert"}, "", ""))
			stalls := v.mode == protocol.SotW && (v.cache == "" || v.cache == publish.SnapshotCache)
			d := wait
			if stalls {
				// Absence can only be bounded: a second is far beyond the bufconn round
				// trip of the other variants (milliseconds).
				d = time.Second
			}
			n, ok, err := recvWithin(g, d)
			if stalls {
				assert.False(t, ok, "the SotW SnapshotCache answered a subset request")
				return
			}
			require.True(t, ok, "a Secret response")
			require.NoError(t, err)
			assert.Equal(t, 1, n, "only the secret asked for")
		})
	}
}

// The same SnapshotCache built without the ADS rule (--cache snapshot-noads,
// NewSnapshotCache(false, ...)) answers the SotW request for a subset of the snapshot's
// secrets with the one secret asked for, under every SotW option; with the rule
// (--cache snapshot) the same request on the same state is never answered. Delta is
// answered on both.
func TestSnapshotNoADSAnswersASubsetOfSecrets(t *testing.T) {
	for _, v := range []variant{
		{"sotw-snapshot", protocol.SotW, publish.Uniform, sotw.Resend, publish.SnapshotCache},
		{"sotw-noads-uniform-resend", protocol.SotW, publish.Uniform, sotw.Resend, publish.SnapshotCacheNoADS},
		{"sotw-noads-pertype-hold", protocol.SotW, publish.PerType, sotw.Hold, publish.SnapshotCacheNoADS},
		{"delta-noads", protocol.Delta, "", "", publish.SnapshotCacheNoADS},
	} {
		t.Run(v.name, func(t *testing.T) {
			h := newHarness(t, v)
			h.publish("tls", tlsState(t, "1", true))
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			g := h.rawStream(ctx)
			require.NoError(t, g.send(resources.SDS.URL(), []string{"quote-cert"}, "", ""))
			if v.cache == publish.SnapshotCache {
				_, ok, _ := recvWithin(g, time.Second)
				assert.False(t, ok, "the SotW SnapshotCache with the ADS rule answered a subset request")
				return
			}
			n, ok, err := recvWithin(g, wait)
			require.True(t, ok, "a Secret response")
			require.NoError(t, err)
			assert.Equal(t, 1, n, "only the secret asked for, not other-cert")
			h.waitLog("the SDS send", func(ev []xdslog.Event) bool {
				return len(filter(ev, ofType("tls", xdslog.EventSend, "SDS"))) >= 1
			})
		})
	}
}
