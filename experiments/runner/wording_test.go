package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xds-workbench/lab/shared/scenario"
)

// TestProgressWordsTheClient: a step keeps its name with every client, but a restart
// says which client it restarts, and a passed step says what the grpc client's failed
// RPCs were where the scenario speaks of Envoy's flags.
func TestProgressWordsTheClient(t *testing.T) {
	restart := scenario.Step{Name: "envoy-restart", Action: scenario.RestartEnvoy}
	kill := scenario.Step{Name: "envoy-kill", Action: scenario.KillEnvoy}
	publish := scenario.Step{Name: "remove-cluster", Action: scenario.Publish, Proves: "removing the cluster (route unchanged) gives 503 NC"}
	for _, c := range []struct {
		st   scenario.Step
		kind string
		want string
	}{
		{restart, "envoy", "step 5/8 envoy-restart"},
		{restart, ClientGRPC, "step 5/8 envoy-restart (restarts the grpc client)"},
		{kill, ClientGRPC, "step 5/8 envoy-kill (kills and restarts the grpc client)"},
		{restart, "simulated", "step 5/8 envoy-restart (restarts the simulated client)"},
		{publish, ClientGRPC, "step 5/8 remove-cluster"},
	} {
		assert.Equal(t, c.want, stepHeader(c.st, 4, 8, c.kind))
	}

	grpcNC := &Checkpoint{Requests: []RequestResult{{Passed: true, Request: Observation{Client: ClientGRPC, Status: 503,
		GRPCStatus: "Unavailable", GRPCMessage: `xds: resource "inventory" of type "ClusterResource" has been removed`, Class: ClassConfigFailure}}}}
	grpcOK := &Checkpoint{Requests: []RequestResult{{Passed: true, Request: Observation{Client: ClientGRPC, Status: 200, GRPCStatus: "OK", Class: ClassServed}}}}
	envoyNC := &Checkpoint{Requests: []RequestResult{{Passed: true, Request: Observation{Client: "envoy", Status: 503, Flags: "NC", Class: ClassConfigFailure}}}}
	for _, c := range []struct {
		st   scenario.Step
		cp   *Checkpoint
		want string
	}{
		{publish, grpcNC, "remove-cluster ok (3 ms): removing the cluster (route unchanged) gives 503 NC (with the grpc client: grpc Unavailable, a config failure)"},
		{publish, envoyNC, "remove-cluster ok (3 ms): removing the cluster (route unchanged) gives 503 NC"},
		{publish, grpcOK, "remove-cluster ok (3 ms): removing the cluster (route unchanged) gives 503 NC"},
		{publish, nil, "remove-cluster ok (3 ms): removing the cluster (route unchanged) gives 503 NC"},
		{scenario.Step{Name: "look"}, nil, "look ok (3 ms)"},
	} {
		assert.Equal(t, c.want, passedLine(c.st, 3, c.cp))
	}
}
