package benchcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// ackClient is the fan-out client (--clients > 1): it speaks ADS the way Envoy does
// (wildcard CDS and LDS, then EDS and RDS by the names those reference) and ACKs every
// response, but it neither validates nor applies anything. A thousand simulated Envoys
// would each keep and validate N decoded clusters (about 40 MB at N = 10,000) and burn
// the same two cores as the control plane; this client keeps only names, so the time to
// the last ACK measures the control plane and the wire.
type ackClient struct {
	mode   protocol.Mode
	nodeID string
}

// run opens one stream on conn and answers until ctx ends (nil) or the stream breaks.
func (c *ackClient) run(ctx context.Context, conn grpc.ClientConnInterface) error {
	return simclient.RunMode(ctx, c.mode, discovery.NewAggregatedDiscoveryServiceClient(conn), c.runSotW, c.runDelta)
}

func (c *ackClient) node() *core.Node { return &core.Node{Id: c.nodeID, Cluster: "bench-fanout"} }

func (c *ackClient) runSotW(ctx context.Context, client discovery.AggregatedDiscoveryServiceClient) error {
	stream, err := client.StreamAggregatedResources(ctx)
	if err != nil {
		return fmt.Errorf("fan-out client: open SotW stream: %w", err)
	}
	subs := map[resources.Type][]string{}
	version := map[resources.Type]string{}
	nonce := map[resources.Type]string{}
	for _, r := range []*discovery.DiscoveryRequest{
		{Node: c.node(), TypeUrl: resources.CDS.URL()},
		{TypeUrl: resources.LDS.URL()},
	} {
		if err := stream.Send(r); err != nil {
			return fmt.Errorf("fan-out client: send %s request: %w", r.GetTypeUrl(), err)
		}
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return streamErr("SotW", err)
		}
		t, ok := resources.TypeOf(resp.GetTypeUrl())
		if !ok {
			continue
		}
		version[t], nonce[t] = resp.GetVersionInfo(), resp.GetNonce()
		out := []*discovery.DiscoveryRequest{{TypeUrl: t.URL(), VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce(), ResourceNames: subs[t]}}
		// A SotW LDS/CDS response is the full set, so the names it references replace the
		// EDS/RDS subscription; a resubscription carries that type's last version and nonce.
		var dep resources.Type
		var names []string
		switch t {
		case resources.CDS:
			dep, names = resources.EDS, anyNames(resp.GetResources())
		case resources.LDS:
			dep, names = resources.RDS, routeNames(resp.GetResources())
		}
		if dep != "" {
			slices.Sort(names)
			if cur, ok := subs[dep]; !ok || !slices.Equal(cur, names) {
				subs[dep] = names
				out = append(out, &discovery.DiscoveryRequest{TypeUrl: dep.URL(), ResourceNames: names, VersionInfo: version[dep], ResponseNonce: nonce[dep]})
			}
		}
		for _, r := range out {
			if err := stream.Send(r); err != nil {
				return fmt.Errorf("fan-out client: send %s: %w", r.GetTypeUrl(), err)
			}
		}
	}
}

func (c *ackClient) runDelta(ctx context.Context, client discovery.AggregatedDiscoveryServiceClient) error {
	stream, err := client.DeltaAggregatedResources(ctx)
	if err != nil {
		return fmt.Errorf("fan-out client: open delta stream: %w", err)
	}
	clusters := map[string]bool{}
	listenerRoutes := map[string][]string{}
	subs := map[resources.Type]map[string]bool{resources.EDS: {}, resources.RDS: {}}
	for _, r := range []*discovery.DeltaDiscoveryRequest{
		{Node: c.node(), TypeUrl: resources.CDS.URL()},
		{TypeUrl: resources.LDS.URL()},
	} {
		if err := stream.Send(r); err != nil {
			return fmt.Errorf("fan-out client: send %s delta request: %w", r.GetTypeUrl(), err)
		}
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return streamErr("delta", err)
		}
		t, ok := resources.TypeOf(resp.GetTypeUrl())
		if !ok {
			continue
		}
		out := []*discovery.DeltaDiscoveryRequest{{TypeUrl: t.URL(), ResponseNonce: resp.GetNonce()}}
		// A delta response carries only what changed, so the referenced names are kept
		// across responses: cluster names (EDS) and each listener's route names (RDS).
		var dep resources.Type
		want := map[string]bool{}
		switch t {
		case resources.CDS:
			dep = resources.EDS
			for _, r := range resp.GetResources() {
				clusters[r.GetName()] = true
			}
			for _, n := range resp.GetRemovedResources() {
				delete(clusters, n)
			}
			want = clusters
		case resources.LDS:
			dep = resources.RDS
			for _, r := range resp.GetResources() {
				listenerRoutes[r.GetName()] = routeNames([]*anypb.Any{r.GetResource()})
			}
			for _, n := range resp.GetRemovedResources() {
				delete(listenerRoutes, n)
			}
			for _, names := range listenerRoutes {
				for _, n := range names {
					want[n] = true
				}
			}
		}
		if dep != "" {
			var add, drop []string
			for n := range want {
				if !subs[dep][n] {
					add = append(add, n)
					subs[dep][n] = true
				}
			}
			for n := range subs[dep] {
				if !want[n] {
					drop = append(drop, n)
					delete(subs[dep], n)
				}
			}
			if len(add) > 0 || len(drop) > 0 {
				out = append(out, &discovery.DeltaDiscoveryRequest{TypeUrl: dep.URL(), ResourceNamesSubscribe: add, ResourceNamesUnsubscribe: drop})
			}
		}
		for _, r := range out {
			if err := stream.Send(r); err != nil {
				return fmt.Errorf("fan-out client: send %s: %w", r.GetTypeUrl(), err)
			}
		}
	}
}

func streamErr(proto string, err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("fan-out client: %s stream closed by server", proto)
	}
	return fmt.Errorf("fan-out client: %s stream: %w", proto, err)
}

// anyNames reads field 1 of each resource without decoding it: field 1 is the name of a
// Cluster, Listener, RouteConfiguration and ClusterLoadAssignment alike. The bench's
// clusters use their own name as EDS service name, so these are the EDS names to watch.
func anyNames(anys []*anypb.Any) []string {
	out := make([]string, 0, len(anys))
	for _, a := range anys {
		if n, ok := field1(a.GetValue()); ok {
			out = append(out, n)
		}
	}
	return out
}

func field1(b []byte) (string, bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", false
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return "", false
			}
			return string(v), true
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return "", false
		}
		b = b[n:]
	}
	return "", false
}

// routeNames decodes the listeners (one in the bench) to find the route configurations
// their HTTP connection managers load over RDS.
func routeNames(anys []*anypb.Any) []string {
	var out []string
	for _, a := range anys {
		l := &listener.Listener{}
		if a.UnmarshalTo(l) != nil {
			continue
		}
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				m := &hcm.HttpConnectionManager{}
				if f.GetTypedConfig().UnmarshalTo(m) == nil && m.GetRds() != nil {
					out = append(out, m.GetRds().GetRouteConfigName())
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
