package simclient

import (
	"testing"

	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// A rejecter turns a valid response into a NACK (nothing accepted, error_detail set,
// counted as a NACK) in both protocols, and the client ACKs again once it says no.
func TestRejecterNacksValidResponses(t *testing.T) {
	cla, err := anypb.New(&endpoint.ClusterLoadAssignment{ClusterName: "inventory"})
	require.NoError(t, err)
	for _, mode := range protocol.Modes {
		t.Run(mode.String(), func(t *testing.T) {
			c, err := New(mode, "")
			require.NoError(t, err)
			reject := true
			c.SetRejecter(func(typ resources.Type) bool { return typ == resources.EDS && reject })
			nack := answer(t, c, mode, "n1", cla)
			assert.Equal(t, ErrRejected.Error(), nack, "first response NACKed")
			assert.Empty(t, c.State().Accepted[resources.EDS], "a rejected response is not accepted")
			reject = false
			assert.Empty(t, answer(t, c, mode, "n2", cla), "second response ACKed")
			assert.Contains(t, c.State().Accepted[resources.EDS], "inventory")
			assert.Equal(t, Counters{Responses: 2, Acks: 1, Nacks: 1}, c.State().Counters[resources.EDS])
		})
	}
}

// answer hands c one EDS response carrying res with nonce and returns the error_detail
// of its answer ("" for an ACK).
func answer(t *testing.T, c *Client, mode protocol.Mode, nonce string, res *anypb.Any) string {
	t.Helper()
	if mode == protocol.SotW {
		reqs := c.handleSotW(&discovery.DiscoveryResponse{TypeUrl: resources.EDS.URL(), Nonce: nonce, VersionInfo: nonce, Resources: []*anypb.Any{res}})
		require.NotEmpty(t, reqs)
		assert.Equal(t, nonce, reqs[0].GetResponseNonce())
		return reqs[0].GetErrorDetail().GetMessage()
	}
	reqs := c.handleDelta(&discovery.DeltaDiscoveryResponse{TypeUrl: resources.EDS.URL(), Nonce: nonce, SystemVersionInfo: nonce,
		Resources: []*discovery.Resource{{Name: "inventory", Version: nonce, Resource: res}}})
	require.NotEmpty(t, reqs)
	assert.Equal(t, nonce, reqs[0].GetResponseNonce())
	return reqs[0].GetErrorDetail().GetMessage()
}
