package publish

import (
	"fmt"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"github.com/stretchr/testify/require"

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
				set, err := resources.Build(resources.State{Version: "1", InventoryPort: 18080, Clusters: n})
				require.NoError(b, err)
				all := map[string]types.Resource{}
				var names []string
				for _, r := range set.ByType[resources.EDS] {
					all[r.Name] = r.Resource
					names = append(names, r.Name)
				}
				moved := make([]types.Resource, 2)
				for i, port := range []int{18081, 18082} {
					s, err := resources.Build(resources.State{Version: "x", InventoryPort: 18080, Clusters: 1, EndpointPorts: map[int]int{0: port}})
					require.NoError(b, err)
					moved[i] = s.ByType[resources.EDS][0].Resource
				}
				c := cachev3.NewLinearCache(resources.EDS.URL(), cachev3.WithLogger(log.LoggerFuncs{}))
				c.SetResources(all)
				w := newEDSWatcher(b, c, names, delta)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					if err := c.UpdateResources(map[string]types.Resource{names[0]: moved[i%2]}, nil); err != nil {
						b.Fatal(err)
					}
					if got := w.next(b); got != 1 {
						b.Fatalf("response with %d resources, want 1", got)
					}
				}
			})
		}
	}
}

// edsWatcher is one client's EDS watch on a LinearCache, re-opened after every response
// the way the library's servers do.
type edsWatcher struct {
	c      *cachev3.LinearCache
	delta  bool
	sub    stream.Subscription
	sotwCh chan cachev3.Response
	dCh    chan cachev3.DeltaResponse
	// version is the last SotW version_info received: the ACK carries it, and a SotW
	// request without one asks for a response even when nothing changed.
	version string
}

func newEDSWatcher(b *testing.B, c *cachev3.LinearCache, names []string, delta bool) *edsWatcher {
	w := &edsWatcher{c: c, delta: delta, sotwCh: make(chan cachev3.Response, 1), dCh: make(chan cachev3.DeltaResponse, 1)}
	if delta {
		w.sub = stream.NewDeltaSubscription(names, nil, nil, false)
	} else {
		w.sub = stream.NewSotwSubscription(names, false)
	}
	// The initial response holds all N; next opens the watch the first change answers.
	w.watch(b)
	if got := w.next(b); got != len(names) {
		b.Fatalf("initial response with %d resources, want %d", got, len(names))
	}
	return w
}

func (w *edsWatcher) watch(b *testing.B) {
	var err error
	if w.delta {
		_, err = w.c.CreateDeltaWatch(&cachev3.DeltaRequest{TypeUrl: resources.EDS.URL(), ResponseNonce: "n"}, &w.sub, w.dCh)
	} else {
		_, err = w.c.CreateWatch(&cachev3.Request{TypeUrl: resources.EDS.URL(), ResponseNonce: "n", VersionInfo: w.version}, &w.sub, w.sotwCh)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// next takes the response the watch got, records what the client now has, and opens the
// next watch; it returns how many resources the response held.
func (w *edsWatcher) next(b *testing.B) int {
	var n int
	if w.delta {
		r := <-w.dCh
		w.sub.SetReturnedResources(r.GetReturnedResources())
		resp, err := r.GetDeltaDiscoveryResponse()
		if err != nil {
			b.Fatal(err)
		}
		n = len(resp.GetResources())
	} else {
		r := <-w.sotwCh
		w.sub.SetReturnedResources(r.GetReturnedResources())
		w.version = r.GetResponseVersion()
		resp, err := r.GetDiscoveryResponse()
		if err != nil {
			b.Fatal(err)
		}
		n = len(resp.GetResources())
	}
	w.watch(b)
	return n
}
