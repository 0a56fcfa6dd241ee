package clientview

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/xds-workbench/lab/shared/resources"
)

// FromCSDS is a grpc-go client's own view of what it holds, from its CSDS answer
// (google.golang.org/grpc/xds/csds). It reads the ClientConfig of node: grpc-go v1.85.0
// fills one per xDS client of its pool (xdsclient.Pool.DumpResources, its ClientScope
// the client's target), with the node of the process's bootstrap, and in it
// generic_xds_configs (not the older per-type xds_config), one per resource the client
// watches or holds (authority.resourceConfig, internal/xds/clients/xdsclient/
// authority.go):
//   - type_url and name;
//   - version_info: the version_info of the last response that carried the resource
//     valid (handleADSResourceUpdate sets the resource's metadata from every valid
//     response, changed content or not); kept on a NACK; "" when REQUESTED or
//     DOES_NOT_EXIST;
//   - client_status: REQUESTED (watched, nothing received yet), ACKED, NACKED (the
//     latest response had this resource invalid; the client keeps the last good one),
//     DOES_NOT_EXIST (the resource-not-found timer fired, or a SotW LDS/CDS response
//     left it out);
//   - error_state for a NACKED one: details is this resource's own validation error
//     (the NACK's error_detail combines every rejected resource's as
//     `resource "NAME": DETAILS`), version_info the rejected response's.
//
// It fails when the response is empty, when node has no ClientConfig or more than one
// (the check compares one client with one ADS stream), and on a type it does not model.
func FromCSDS(resp *statuspb.ClientStatusResponse, node string) ([]Resource, error) {
	if resp == nil {
		return nil, errors.New("CSDS: no response")
	}
	var mine []*statuspb.ClientConfig
	var nodes []string
	for _, c := range resp.GetConfig() {
		nodes = append(nodes, c.GetNode().GetId())
		if c.GetNode().GetId() == node {
			mine = append(mine, c)
		}
	}
	switch {
	case len(mine) == 0:
		return nil, fmt.Errorf("CSDS: no client config for node %q (nodes: %s)", node, strings.Join(orNone(nodes), ", "))
	case len(mine) > 1:
		scopes := make([]string, len(mine))
		for i, c := range mine {
			scopes[i] = c.GetClientScope()
		}
		return nil, fmt.Errorf("CSDS: node %q has %d xDS clients (scopes %s): the check compares one client with one stream", node, len(mine), strings.Join(scopes, ", "))
	}
	var out []Resource
	for _, g := range mine[0].GetGenericXdsConfigs() {
		typ, ok := resources.TypeOf(g.GetTypeUrl())
		if !ok {
			return nil, fmt.Errorf("CSDS: resource %q has type %q, which the workbench does not model", g.GetName(), g.GetTypeUrl())
		}
		r := Resource{Type: string(typ), Name: g.GetName(), Version: g.GetVersionInfo(), Status: statusName(g.GetClientStatus())}
		if raw := g.GetXdsConfig(); raw != nil {
			// The bytes as received (authority.resourceConfig: state.cache.Bytes()).
			r.Hash = cachev3.HashResource(raw.GetValue())
		}
		if es := g.GetErrorState(); es != nil {
			r.Error, r.RejectedVersion = es.GetDetails(), es.GetVersionInfo()
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Type+"/"+a.Name, b.Type+"/"+b.Name) })
	return out, nil
}

// statusName is a ClientResourceStatus's name (ACKED, NACKED, ...); a value the proto
// does not define is UNKNOWN.
func statusName(s adminv3.ClientResourceStatus) string {
	if name, ok := adminv3.ClientResourceStatus_name[int32(s)]; ok {
		return name
	}
	return StatusUnknown
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}
