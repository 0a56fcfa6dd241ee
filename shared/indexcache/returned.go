package indexcache

import (
	"context"
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// diff is what a response changes in the client's returned-versions map (the
// subscription's ReturnedResources, which the library's servers hand back to the cache
// on the next watch). The LinearCache returns a copy of that whole map with the changes
// made; this cache changes the map itself, when the server takes the response
// (GetReturnedResources: pkg/server/sotw/v3 streamWrapper.send, pkg/server/delta/v3
// process), on the stream's goroutine, the one that owns the subscription. Not earlier:
// the SotW ADS server drops a response of a type whose new request arrives first
// (processADS, processAllExcept), and the client must then be known not to have it, as
// with the LinearCache whose copy is dropped with it.
//
// The library's servers change this map themselves (Subscription.SetResourceSubscription,
// UpdateResourceSubscriptions), so they own it; returnedMu orders the apply with the
// cache's reads of it.
type diff struct {
	cache   *Cache
	base    map[string]string
	updated map[string]string
	removed []string
	once    sync.Once
}

func (d *diff) apply() map[string]string {
	d.once.Do(func() {
		d.cache.returnedMu.Lock()
		defer d.cache.returnedMu.Unlock()
		if d.base == nil {
			d.base = make(map[string]string, len(d.updated))
		}
		for n, v := range d.updated {
			d.base[n] = v
		}
		for _, n := range d.removed {
			delete(d.base, n)
		}
	})
	return d.base
}

// sotwResponse is a SotW answer: the resources to send, marshaled once by Update.
type sotwResponse struct {
	req     *cachev3.Request
	version string
	entries []*entry
	diff    *diff

	once sync.Once
	out  *discovery.DiscoveryResponse
}

var _ cachev3.Response = (*sotwResponse)(nil)

func (r *sotwResponse) GetDiscoveryResponse() (*discovery.DiscoveryResponse, error) {
	r.once.Do(func() {
		res := make([]*anypb.Any, len(r.entries))
		for i, e := range r.entries {
			res[i] = &anypb.Any{TypeUrl: r.req.GetTypeUrl(), Value: e.bytes}
		}
		r.out = &discovery.DiscoveryResponse{VersionInfo: r.version, Resources: res, TypeUrl: r.req.GetTypeUrl()}
	})
	return r.out, nil
}
func (r *sotwResponse) GetRequest() *discovery.DiscoveryRequest { return r.req }
func (r *sotwResponse) GetVersion() (string, error)             { return r.version, nil }
func (r *sotwResponse) GetResponseVersion() string              { return r.version }
func (r *sotwResponse) GetReturnedResources() map[string]string { return r.diff.apply() }
func (r *sotwResponse) GetContext() context.Context             { return context.Background() }

// deltaResponse is a delta answer: the changed resources with their hashes, the removed
// names.
type deltaResponse struct {
	req     *cachev3.DeltaRequest
	version string
	entries []*entry
	removed []string
	diff    *diff

	once sync.Once
	out  *discovery.DeltaDiscoveryResponse
}

var _ cachev3.DeltaResponse = (*deltaResponse)(nil)

func (r *deltaResponse) GetDeltaDiscoveryResponse() (*discovery.DeltaDiscoveryResponse, error) {
	r.once.Do(func() {
		res := make([]*discovery.Resource, len(r.entries))
		for i, e := range r.entries {
			res[i] = &discovery.Resource{Name: e.name, Version: e.hash, Resource: &anypb.Any{TypeUrl: r.req.GetTypeUrl(), Value: e.bytes}}
		}
		r.out = &discovery.DeltaDiscoveryResponse{Resources: res, RemovedResources: r.removed, TypeUrl: r.req.GetTypeUrl(), SystemVersionInfo: r.version}
	})
	return r.out, nil
}
func (r *deltaResponse) GetDeltaRequest() *discovery.DeltaDiscoveryRequest { return r.req }
func (r *deltaResponse) GetSystemVersion() (string, error)                 { return r.version, nil }
func (r *deltaResponse) GetResponseVersion() string                        { return r.version }
func (r *deltaResponse) GetNextVersionMap() map[string]string              { return r.diff.apply() }
func (r *deltaResponse) GetReturnedResources() map[string]string           { return r.diff.apply() }
func (r *deltaResponse) GetContext() context.Context                       { return context.Background() }
