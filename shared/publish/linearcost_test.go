package publish

import (
	"fmt"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"

	"github.com/xds-workbench/lab/shared/publish/publishtest"
	"github.com/xds-workbench/lab/shared/resources"
)

// BenchmarkLinearCacheEndpointChange is what go-control-plane v0.14.0's LinearCache itself
// costs per endpoint change with one client subscribed, as Envoy is, to every one of N
// assignments by name: UpdateResources of the one changed assignment, the response it
// computes, and the watch the server opens again after the response (what
// pkg/server/{sotw,delta}/v3 do). No transport, no recorder. It grows with N although one
// resource changes: linear.go's computeResourceChange walks every subscribed name, and
// trackWatch/removeWatch file the watch under every name (docs/performance.md).
func BenchmarkLinearCacheEndpointChange(b *testing.B) {
	for _, delta := range []bool{true, false} {
		for _, n := range []int{1_000, 10_000} {
			mode := "sotw"
			if delta {
				mode = "delta"
			}
			b.Run(fmt.Sprintf("%s/N=%d", mode, n), func(b *testing.B) {
				all, names, moved := publishtest.Assignments(b, n)
				c := cachev3.NewLinearCache(resources.EDS.URL(), cachev3.WithLogger(log.LoggerFuncs{}))
				c.SetResources(all)
				w := publishtest.NewEDSWatcher(b, c, publishtest.Watch{Names: names, Delta: delta})
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					if err := c.UpdateResources(map[string]types.Resource{names[0]: moved[i%2]}, nil); err != nil {
						b.Fatal(err)
					}
					if got := w.Next(b); got != 1 {
						b.Fatalf("response with %d resources, want 1", got)
					}
				}
			})
		}
	}
}
