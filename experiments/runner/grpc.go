package runner

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
)

// ClientGRPC is grpc-go's own xDS client as the data plane (experiments/grpcclient).
const ClientGRPC = "grpc"

// errGRPCOnDemand is why on-demand scenarios do not apply to the grpc client.
var errGRPCOnDemand = errors.New("on-demand xDS is Envoy's on_demand filter (VHDS, on-demand CDS), which grpc-go has not " +
	"(it NACKs a listener naming a filter it has no implementation of: internal/xds/xdsclient/xdsresource/unmarshal_lds.go, validateHTTPFilterConfig)")

// grpcCommand checks a grpc run before anything starts and returns how to run the client.
func grpcCommand(o Options, sc *scenario.Scenario) (grpcclient.Command, error) {
	if o.Mode != protocol.SotW {
		return grpcclient.Command{}, grpcclient.ErrNoDelta
	}
	if o.ConfigYAML != "" {
		return grpcclient.Command{}, &option.Error{Option: OptionConfigYAML, Err: errors.New("is merged over Envoy's bootstrap; the grpc client has none")}
	}
	if sc.OnDemand.Any() {
		return grpcclient.Command{}, &scenario.NotApplicableError{Scenario: sc.Name, Where: "the grpc client", Reason: errGRPCOnDemand}
	}
	if why, ok := sc.NotFor[ClientGRPC]; ok {
		return grpcclient.Command{}, &scenario.NotApplicableError{Scenario: sc.Name, Where: "the grpc client", Reason: errors.New(why)}
	}
	if names := listenerNames(sc); len(names) != 1 {
		return grpcclient.Command{}, &scenario.NotApplicableError{Scenario: sc.Name, Where: "the grpc client",
			Reason: fmt.Errorf("the grpc client dials one listener (xds:///<name>); the scenario has %d: %v", len(names), names)}
	}
	if err := sc.CheckProxyless(); err != nil {
		return grpcclient.Command{}, &scenario.NotApplicableError{Scenario: sc.Name, Where: "the grpc client", Reason: err}
	}
	if o.GRPCCommand.Path != "" {
		return o.GRPCCommand, nil
	}
	return grpcclient.LabCommand()
}

// listenerNames are the listener names a scenario's resources define, sorted.
func listenerNames(sc *scenario.Scenario) []string {
	seen := map[string]bool{}
	for _, r := range sc.Resources {
		for _, it := range r.Items {
			if it.Type == resources.LDS {
				seen[it.Name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// grpcTarget is what the grpc client dials: the scenario's one listener (grpc-go
// subscribes to the listener its target names; see resources.ProxylessTarget).
func grpcTarget(sc *scenario.Scenario) string {
	if names := listenerNames(sc); len(names) == 1 {
		return "xds:///" + names[0]
	}
	return resources.ProxylessTarget
}
