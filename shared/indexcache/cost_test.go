package indexcache_test

import (
	"fmt"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xds-workbench/lab/shared/indexcache"
	"github.com/xds-workbench/lab/shared/publish/publishtest"
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
						lc := cachev3.NewLinearCache(rsrc.EndpointType, cachev3.WithVersionPrefix("p."), cachev3.WithLogger(log.LoggerFuncs{}))
						c, update = lc, func(m map[string]types.Resource) { _ = lc.UpdateResources(m, nil) }
					}
					update(all)
					ws := make([]*publishtest.EDSWatcher, k)
					for i := range ws {
						ws[i] = publishtest.NewEDSWatcher(b, c, publishtest.Watch{Names: names, Delta: delta, Resubscribe: true})
					}
					moved := []types.Resource{resourceFor(rsrc.EndpointType, names[0], 1), resourceFor(rsrc.EndpointType, names[0], 2)}
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						i++
						update(map[string]types.Resource{names[0]: moved[i%2]})
						for _, w := range ws {
							if got := w.Next(b); got != 1 {
								b.Fatalf("response with %d resources, want 1", got)
							}
						}
					}
				})
			}
		}
	}
}
