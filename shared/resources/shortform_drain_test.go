package resources

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBuildListenerBufferLimit: the buffer limit is the listener's own
// per_connection_buffer_limit_bytes (not its filter chain's), and absent it is unset; a
// proxyless listener refuses it.
func TestBuildListenerBufferLimit(t *testing.T) {
	t.Parallel()
	spec := ListenerSpec{Name: "l", Port: 19000, RouteName: "r"}
	plain, err := BuildListener(spec)
	require.NoError(t, err)
	assert.Nil(t, plain.PerConnectionBufferLimitBytes)

	spec.BufferLimit = 65536
	limited, err := BuildListener(spec)
	require.NoError(t, err)
	require.NoError(t, limited.ValidateAll())
	assert.Equal(t, uint32(65536), limited.GetPerConnectionBufferLimitBytes().GetValue())
	assert.Equal(t, len(plain.FilterChains), len(limited.FilterChains))

	spec.Proxyless = true
	_, err = BuildListener(spec)
	assert.ErrorContains(t, err, "proxyless")
}

// TestBuildClusterHealthCheck: a health check path gives one active HTTP health check
// with the defaults (1 s interval and timeout, thresholds 1) or the given times.
func TestBuildClusterHealthCheck(t *testing.T) {
	t.Parallel()
	plain, err := BuildCluster(ClusterSpec{Name: "c"})
	require.NoError(t, err)
	assert.Empty(t, plain.HealthChecks)

	c, err := BuildCluster(ClusterSpec{Name: "c", HealthCheck: HealthCheckSpec{Path: "/healthz", Interval: 5 * time.Second}})
	require.NoError(t, err)
	require.NoError(t, c.ValidateAll())
	require.Len(t, c.HealthChecks, 1)
	hc := c.HealthChecks[0]
	assert.Equal(t, "/healthz", hc.GetHttpHealthCheck().GetPath())
	assert.Equal(t, 5*time.Second, hc.GetInterval().AsDuration())
	assert.Equal(t, time.Second, hc.GetTimeout().AsDuration())
	assert.Equal(t, uint32(1), hc.GetHealthyThreshold().GetValue())
	assert.Equal(t, uint32(1), hc.GetUnhealthyThreshold().GetValue())
}
