package indexcache_test

import (
	"fmt"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"

	"github.com/xds-workbench/lab/shared/indexcache"
)

// BenchmarkEndpointChange is one endpoint change with K clients each subscribed, as Envoy
// is, to all N assignments by name, for the indexed cache and go-control-plane's
// LinearCache: the update, the K responses, and the K watches the server opens again
// after them (what pkg/server/{sotw,delta}/v3 do), as
// publish.BenchmarkLinearCacheEndpointChange measures the LinearCache alone. No
// transport. The LinearCache grows with N (computeResourceChange, trackWatch); the
// indexed cache in delta should not, and in SotW grows by what the library's SotW
// re-watch requires (the subscription map rebuilt per request, filed per watch).
func BenchmarkEndpointChange(b *testing.B) {
	const k = 10
	for _, cacheName := range []string{"indexed", "linear"} {
		for _, delta := range []bool{true, false} {
			for _, n := range []int{10, 10_000} {
				b.Run(fmt.Sprintf("%s/%s/N=%d/K=%d", cacheName, modeName(delta), n, k), func(b *testing.B) {
					all := map[string]types.Resource{}
					names := make([]string, n)
					for i := range names {
						names[i] = fmt.Sprintf("c%d", i)
						all[names[i]] = resourceFor(rsrc.EndpointType, names[i], 0)
					}
					var update func(map[string]types.Resource)
					var c cachev3.Cache
					if cacheName == "indexed" {
						ic := indexcache.New("p.", rsrc.EndpointType)
						c, update = ic, func(m map[string]types.Resource) { _ = ic.Update(rsrc.EndpointType, m, nil) }
					} else {
						lc := cachev3.NewLinearCache(rsrc.EndpointType, cachev3.WithVersionPrefix("p."), cachev3.WithLogger(quiet{}))
						c, update = lc, func(m map[string]types.Resource) { _ = lc.UpdateResources(m, nil) }
					}
					update(all)
					ws := make([]*watcher, k)
					for i := range ws {
						ws[i] = newWatcher(b, c, names, delta)
					}
					moved := []types.Resource{resourceFor(rsrc.EndpointType, names[0], 1), resourceFor(rsrc.EndpointType, names[0], 2)}
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						i++
						update(map[string]types.Resource{names[0]: moved[i%2]})
						for _, w := range ws {
							if got := w.next(b); got != 1 {
								b.Fatalf("response with %d resources, want 1", got)
							}
						}
					}
				})
			}
		}
	}
}

// watcher is one client's EDS watch, opened again after every response the way the
// library's servers do (a SotW request repeats the names: a new subscription map).
type watcher struct {
	c       cachev3.Cache
	delta   bool
	names   []string
	sub     stream.Subscription
	ch      chan cachev3.Response
	dch     chan cachev3.DeltaResponse
	version string
	nonce   int
}

func newWatcher(b *testing.B, c cachev3.Cache, names []string, delta bool) *watcher {
	w := &watcher{c: c, delta: delta, names: names, ch: make(chan cachev3.Response, 1), dch: make(chan cachev3.DeltaResponse, 1)}
	if delta {
		w.sub = stream.NewDeltaSubscription(names, nil, nil, false)
	} else {
		w.sub = stream.NewSotwSubscription(names, false)
	}
	w.watch(b)
	if got := w.next(b); got != len(names) {
		b.Fatalf("initial response with %d resources, want %d", got, len(names))
	}
	return w
}

func (w *watcher) watch(b *testing.B) {
	var err error
	w.nonce++
	nonce := fmt.Sprint(w.nonce)
	if w.delta {
		_, err = w.c.CreateDeltaWatch(&cachev3.DeltaRequest{TypeUrl: rsrc.EndpointType, ResponseNonce: nonce}, w.sub, w.dch)
	} else {
		w.sub.SetResourceSubscription(w.names) // what the SotW server does with every request
		_, err = w.c.CreateWatch(&cachev3.Request{TypeUrl: rsrc.EndpointType, ResponseNonce: nonce, VersionInfo: w.version}, w.sub, w.ch)
	}
	if err != nil {
		b.Fatal(err)
	}
}

func (w *watcher) next(b *testing.B) int {
	var n int
	if w.delta {
		r := <-w.dch
		w.sub.SetReturnedResources(r.GetReturnedResources())
		resp, _ := r.GetDeltaDiscoveryResponse()
		n = len(resp.GetResources())
	} else {
		r := <-w.ch
		w.sub.SetReturnedResources(r.GetReturnedResources())
		w.version = r.GetResponseVersion()
		resp, _ := r.GetDiscoveryResponse()
		n = len(resp.GetResources())
	}
	w.watch(b)
	return n
}
