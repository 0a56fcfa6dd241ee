package resources

import (
	"testing"

	upstreamhttp "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// TestBuildClusterHTTP2: an HTTP/2 cluster carries HttpProtocolOptions with explicit
// HTTP/2 under the extension's name, validates, and packs the same bytes every time
// (content hashes must not move); the default cluster carries none.
func TestBuildClusterHTTP2(t *testing.T) {
	t.Parallel()
	plain, err := BuildCluster(ClusterSpec{Name: "c"})
	require.NoError(t, err)
	assert.Empty(t, plain.TypedExtensionProtocolOptions)

	h2, err := BuildCluster(ClusterSpec{Name: "c", HTTP2: true})
	require.NoError(t, err)
	require.NoError(t, h2.ValidateAll())
	packed := h2.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
	require.NotNil(t, packed)
	var opts upstreamhttp.HttpProtocolOptions
	require.NoError(t, packed.UnmarshalTo(&opts))
	assert.NotNil(t, opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions(), "explicit HTTP/2")

	again, err := BuildCluster(ClusterSpec{Name: "c", HTTP2: true})
	require.NoError(t, err)
	assert.True(t, proto.Equal(h2, again))
	assert.Equal(t, packed.Value, again.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].Value)
}
