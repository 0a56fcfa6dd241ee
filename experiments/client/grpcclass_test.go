package client

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// grpc-go's answers as the front door relays them (messages from the first grpc pack run).
func TestGRPCClass(t *testing.T) {
	for msg, want := range map[string]string{
		`failed to push new configuration to child "cluster:b": [xDS node id: n]: xds: resource "b" of type "ClusterResource" has been removed`: ClassConfigFailure,
		`[xDS node id: n]: rpc error: code = Unavailable desc = no matched route was found`:                                                     ClassConfigFailure,
		`unknown cluster selected for RPC: "cluster:x"`:                                                                                         ClassConfigFailure,
		`weighted-target: no targets to pick from`:                                                                                              ClassUpstreamFailure,
		`last connection error: connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`:   ClassUpstreamFailure,
		`context deadline exceeded`: ClassOther,
	} {
		assert.Equal(t, want, grpcClass("Unavailable", msg), msg)
	}
	assert.Equal(t, ClassServed, grpcClass("OK", ""))
}
