package controlplane

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
	"github.com/xds-workbench/lab/sotw"
)

// TestNewServesOnAnyListener: New builds what Start serves, and Serve runs it on a
// listener the caller made (bufconn here: no port), until Stop, which Serve then
// returns from.
func TestNewServesOnAnyListener(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			log := &xdslogtest.Log{}
			cp, err := New(Options{Mode: mode, Recorder: xdslog.NewRecorder(log, mode)})
			require.NoError(t, err)
			_, err = cp.Publish(context.Background(), resources.State{Version: "1", InventoryPort: 18080})
			require.NoError(t, err)
			lis := bufconntest.Listen()
			served := make(chan error, 1)
			go func() { served <- cp.Serve(lis) }()

			conn := lis.Dial(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			serveCDS(t, ctx, conn, mode)
			assert.Equal(t, "bufconn", cp.Addr())
			assert.Zero(t, cp.Port(), "a bufconn listener has no port")
			assert.Error(t, cp.Serve(bufconntest.Listen()), "a control plane serves one listener")

			cp.Stop()
			select {
			case err := <-served:
				assert.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("Serve did not return after Stop")
			}
			assert.ErrorIs(t, cp.Serve(bufconntest.Listen()), grpc.ErrServerStopped)
		})
	}
}

// TestStopWithoutServe: a control plane built and never served stops at once.
func TestStopWithoutServe(t *testing.T) {
	cp, err := New(Options{Mode: protocol.SotW, Recorder: xdslog.NewRecorder(&xdslogtest.Log{}, protocol.SotW)})
	require.NoError(t, err)
	stopped := make(chan struct{})
	go func() { cp.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop of a control plane never served did not return")
	}
}

// TestNewRefusesWhatStartRefuses: New's errors are Start's without "start ".
func TestNewRefusesWhatStartRefuses(t *testing.T) {
	o := Options{Mode: protocol.SotW, Recorder: xdslog.NewRecorder(&xdslogtest.Log{}, protocol.SotW), Cache: publish.LinearCache, NackPolicy: sotw.Resend}
	_, newErr := New(o)
	_, startErr := Start(context.Background(), o)
	require.Error(t, newErr)
	assert.Equal(t, "start "+newErr.Error(), startErr.Error())
}

// TestCheckCacheOptionsTyped: each refusal wraps its own error, so callers that word it
// for their flags match it rather than restate the rule.
func TestCheckCacheOptionsTyped(t *testing.T) {
	for _, cache := range []publish.Cache{publish.LinearCache, publish.IndexedCache} {
		for _, tc := range []struct {
			versions publish.VersionStrategy
			policy   sotw.NackPolicy
			want     error
		}{
			{publish.Uniform, "", ErrUniformNeedsSnapshot},
			{"", sotw.Resend, ErrResendNeedsSnapshot},
			{"", sotw.Backoff, ErrBackoffNeedsSnapshot},
		} {
			err := CheckCacheOptions(cache, protocol.SotW, tc.versions, tc.policy)
			assert.ErrorIs(t, err, tc.want, "%s %s %s", cache, tc.versions, tc.policy)
			for _, other := range []error{ErrUniformNeedsSnapshot, ErrResendNeedsSnapshot, ErrBackoffNeedsSnapshot} {
				if other != tc.want {
					assert.False(t, errors.Is(err, other))
				}
			}
			assert.NoError(t, CheckCacheOptions(publish.SnapshotCache, protocol.SotW, tc.versions, tc.policy))
			assert.NoError(t, CheckCacheOptions(publish.SnapshotCacheNoADS, protocol.SotW, tc.versions, tc.policy))
			assert.NoError(t, CheckCacheOptions(cache, protocol.Delta, tc.versions, tc.policy))
		}
		for _, p := range []sotw.NackPolicy{"", sotw.Hold, sotw.Revert} {
			assert.NoError(t, CheckCacheOptions(cache, protocol.SotW, publish.PerType, p))
		}
	}
}

// TestSotWDefaults: what each cache does when the SotW options are unset passes its own
// check.
func TestSotWDefaults(t *testing.T) {
	for _, cache := range publish.Caches {
		v, p := SotWDefaults(cache)
		assert.NoError(t, CheckCacheOptions(cache, protocol.SotW, v, p), "%s", cache)
	}
	v, p := SotWDefaults(publish.LinearCache)
	assert.Equal(t, publish.PerType, v)
	assert.Equal(t, sotw.Hold, p)
	v, p = SotWDefaults(publish.SnapshotCache)
	assert.Equal(t, publish.Uniform, v)
	assert.Equal(t, sotw.Resend, p)
	v, p = SotWDefaults(publish.SnapshotCacheNoADS)
	assert.Equal(t, publish.Uniform, v)
	assert.Equal(t, sotw.Resend, p)
}
