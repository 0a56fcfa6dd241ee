package publish

import (
	"context"
	"maps"
	"slices"

	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xds-workbench/lab/shared/resources"
)

// OnDemandCache serves virtual hosts (VHDS) as on-demand xDS asks of a server, in front
// of either library cache. go-control-plane v0.14.0 serves the VirtualHost type like any
// other, and so misses three things Envoy's VHDS needs; this decorator adds them and
// passes every other type and every SotW watch through untouched:
//
//  1. Named only. Envoy's first VHDS request on a stream is a legacy wildcard (empty
//     resource_names_subscribe: DeltaSubscriptionState::getNextRequestAckless), and both
//     library caches answer a wildcard with every virtual host (pkg/cache/v3/delta.go
//     createDeltaResponse), so nothing would be on demand. VHDS says the server sends only
//     the subscribed virtual hosts (Envoy's VHDS doc: "filter the configuration sent to
//     an individual Envoy instance to only contain the subscribed virtual hosts").
//  2. An answer to that first request. Envoy's VHDS subscription is an init target of the
//     listener: until a response names something for it, the listener warms for
//     initial_fetch_timeout (15 s, observed). An empty delta response never reaches the
//     subscription (the watch map delivers only names), and a removal reaches it only
//     when the name is in its route configuration's namespace ("<route>/…"). So the
//     first answer removes "<route>/*" for each VHDS route configuration: a name no
//     virtual host has (the builders refuse a "*" host), which Envoy drops as unknown.
//  3. Not found. When a request subscribes to a virtual host the state does not have,
//     the answer is a resource with that name, the name as its alias and no body: Envoy
//     resumes the held request (VHDS doc: a response "where one of the aliases or the
//     name … exactly matches") and answers 404 NR. Without it the request is held until
//     the client gives up: the on_demand filter has no VHDS timeout. go-control-plane's
//     delta server sends nothing for a name it never had (pkg/cache/v3/delta.go).
//
// State returns what is published for a node: the names it has and its VHDS route
// configurations. It is read when a request arrives, so a virtual host published later
// reaches a client that asked for it earlier through the library's own watch.
type OnDemandCache struct {
	cachev3.Cache
	State func(node string) *resources.Set
}

// CreateDeltaWatch applies the three rules above to VirtualHost watches.
func (c *OnDemandCache) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	if req.GetTypeUrl() != rsrc.VirtualHostType {
		return c.Cache.CreateDeltaWatch(req, sub, ch)
	}
	set := c.State(req.GetNode().GetId())
	if initialWildcard(req, sub) {
		if routes := vhdsRoutes(set); len(routes) > 0 {
			removed := make([]string, len(routes))
			for i, r := range routes {
				removed[i] = resources.VirtualHostName(r, "*")
			}
			ch <- &markerResponse{req: req, version: set.Version, removed: removed, returned: maps.Clone(sub.ReturnedResources())}
			return nil, nil
		}
	}
	if missing := missingHosts(req, set); len(missing) > 0 {
		returned := maps.Clone(sub.ReturnedResources())
		for _, n := range missing {
			delete(returned, n)
		}
		ch <- &markerResponse{req: req, version: set.Version, notFound: missing, returned: returned}
		return nil, nil
	}
	return c.Cache.CreateDeltaWatch(req, namedOnly{sub}, ch)
}

// initialWildcard is Envoy's first VHDS request of a stream before it asked for anything.
func initialWildcard(req *cachev3.DeltaRequest, sub cachev3.Subscription) bool {
	return req.GetResponseNonce() == "" && len(req.GetResourceNamesSubscribe()) == 0 &&
		len(req.GetInitialResourceVersions()) == 0 && len(sub.SubscribedResources()) == 0
}

// vhdsRoutes names the set's route configurations that take VHDS, in order.
func vhdsRoutes(set *resources.Set) []string {
	if set == nil {
		return nil
	}
	var out []string
	for _, r := range set.ByType[resources.RDS].All() {
		if rc, ok := r.Resource.(*route.RouteConfiguration); ok && rc.GetVhds() != nil {
			out = append(out, r.Name)
		}
	}
	return out
}

// missingHosts lists the virtual hosts req newly subscribes to that set does not have.
func missingHosts(req *cachev3.DeltaRequest, set *resources.Set) []string {
	if set == nil {
		return nil
	}
	var out []string
	for _, n := range req.GetResourceNamesSubscribe() {
		if n != "*" && !set.Has(resources.VHDS, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// namedOnly presents a subscription as explicit names only (rule 1).
type namedOnly struct{ cachev3.Subscription }

func (namedOnly) IsWildcard() bool { return false }

// markerResponse is an answer the library cannot build: removals of names the client
// never had (rule 2) or bodiless resources that say a name does not exist (rule 3).
type markerResponse struct {
	req *cachev3.DeltaRequest
	// version is the published state's label: system_version_info, as the library's
	// own responses carry it.
	version  string
	removed  []string
	notFound []string
	returned map[string]string
}

func (m *markerResponse) GetDeltaDiscoveryResponse() (*discovery.DeltaDiscoveryResponse, error) {
	out := &discovery.DeltaDiscoveryResponse{TypeUrl: m.req.GetTypeUrl(), SystemVersionInfo: m.version, RemovedResources: slices.Clone(m.removed)}
	for _, n := range m.notFound {
		out.Resources = append(out.Resources, &discovery.Resource{Name: n, Aliases: []string{n}})
	}
	return out, nil
}
func (m *markerResponse) GetDeltaRequest() *discovery.DeltaDiscoveryRequest { return m.req }
func (m *markerResponse) GetSystemVersion() (string, error)                 { return m.version, nil }
func (m *markerResponse) GetResponseVersion() string                        { return m.version }
func (m *markerResponse) GetNextVersionMap() map[string]string              { return m.returned }
func (m *markerResponse) GetReturnedResources() map[string]string           { return m.returned }
func (m *markerResponse) GetContext() context.Context                       { return context.Background() }
