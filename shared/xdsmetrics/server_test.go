package xdsmetrics

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Serve binds loopback only, serves the registry at /metrics and nothing else, and
// Close stops it.
func TestServe(t *testing.T) {
	t.Parallel()
	_, err := Serve("0.0.0.0:0", New("", "snapshot"))
	assert.ErrorContains(t, err, "not loopback")

	m := New(protocol.Delta, "linear")
	m.Observe(xdslog.Event{Event: xdslog.EventStreamOpen, Mode: protocol.Delta, Stream: 1})
	s, err := Serve("127.0.0.1:0", m)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(s.URL(), "http://127.0.0.1:") && strings.HasSuffix(s.URL(), "/metrics"), s.URL())
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(s.URL())
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `lab_xds_connected_streams{cache="linear",mode="delta"} 1`)
	assert.Contains(t, string(body), `lab_xds_nack_total{cache="linear",mode="delta",type="LDS"} 0`)
	assert.NotContains(t, string(body), "go_goroutines", "its own registry, not the global one")

	resp, err = c.Get("http://" + s.Addr() + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	require.NoError(t, s.Close())
	_, err = c.Get(s.URL())
	assert.Error(t, err, "closed")
}
