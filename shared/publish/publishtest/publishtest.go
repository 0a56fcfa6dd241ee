// Package publishtest is what the cache half's tests share (shared/publish, its
// indexcache, and the transports' tests that feed a cache): publishing a built state, and
// a client's EDS watch on a library cache, opened again after each response the way
// go-control-plane's servers do (pkg/server/{sotw,delta}/v3), for the benchmarks that
// measure a cache without a transport.
//
// It imports neither shared/publish nor shared/indexcache, so that their own tests can
// use it.
package publishtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/resources"
)

// Publisher is what Publish needs of a publisher (publish.StatePublisher has it).
type Publisher interface {
	Publish(ctx context.Context, set *resources.Set) error
}

// Publish builds s and publishes it with p, failing t on an error of either.
func Publish(t testing.TB, p Publisher, s resources.State) *resources.Set {
	t.Helper()
	set, err := resources.Build(s)
	require.NoError(t, err)
	require.NoError(t, p.Publish(t.Context(), set))
	return set
}

// Assignments are n built endpoint assignments by name, with their names in order, and
// two other contents for the first of them (its endpoint on another port): what a
// benchmark of one endpoint change sets and then alternates.
func Assignments(t testing.TB, n int) (all map[string]types.Resource, names []string, moved [2]types.Resource) {
	t.Helper()
	set, err := resources.Build(resources.State{Version: "1", InventoryPort: 18080, Clusters: n})
	require.NoError(t, err)
	all = map[string]types.Resource{}
	for _, r := range set.ByType[resources.EDS].All() {
		all[r.Name] = r.Resource
		names = append(names, r.Name)
	}
	for i, port := range []int{18081, 18082} {
		s, err := resources.Build(resources.State{Version: "x", InventoryPort: 18080, Clusters: 1, EndpointPorts: map[int]int{0: port}})
		require.NoError(t, err)
		moved[i] = s.ByType[resources.EDS].At(0).Resource
	}
	return all, names, moved
}

// Watch says what an EDSWatcher asks for.
type Watch struct {
	// Names are the assignments it subscribes to by name, as Envoy does.
	Names []string
	// Delta watches as a delta client does (CreateDeltaWatch), else as a SotW one.
	Delta bool
	// Resubscribe sets the SotW subscription again with every request, as the library's
	// SotW server does (a new subscription map each time); without it the subscription
	// is set once, so that only the cache's own work is measured.
	Resubscribe bool
}

// EDSWatcher is one client's EDS watch on a cache.
type EDSWatcher struct {
	c     cachev3.Cache
	w     Watch
	sub   stream.Subscription
	ch    chan cachev3.Response
	dch   chan cachev3.DeltaResponse
	nonce int
	// version is the last SotW version_info received: the ACK carries it, and a SotW
	// request without one asks for a response even when nothing changed.
	version string
}

// NewEDSWatcher opens w's watch on c and takes the initial response, which must hold
// every name: Next then waits for what the first change sends.
func NewEDSWatcher(b testing.TB, c cachev3.Cache, w Watch) *EDSWatcher {
	b.Helper()
	ew := &EDSWatcher{c: c, w: w, ch: make(chan cachev3.Response, 1), dch: make(chan cachev3.DeltaResponse, 1)}
	if w.Delta {
		ew.sub = stream.NewDeltaSubscription(w.Names, nil, nil, false)
	} else {
		ew.sub = stream.NewSotwSubscription(w.Names, false)
	}
	ew.watch(b)
	if got := ew.Next(b); got != len(w.Names) {
		b.Fatalf("initial response with %d resources, want %d", got, len(w.Names))
	}
	return ew
}

func (w *EDSWatcher) watch(b testing.TB) {
	var err error
	w.nonce++
	nonce := fmt.Sprint(w.nonce)
	if w.w.Delta {
		_, err = w.c.CreateDeltaWatch(&cachev3.DeltaRequest{TypeUrl: resources.EDS.URL(), ResponseNonce: nonce}, &w.sub, w.dch)
	} else {
		if w.w.Resubscribe {
			w.sub.SetResourceSubscription(w.w.Names)
		}
		_, err = w.c.CreateWatch(&cachev3.Request{TypeUrl: resources.EDS.URL(), ResponseNonce: nonce, VersionInfo: w.version}, &w.sub, w.ch)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// Next takes the response the watch got, records what the client now has, and opens the
// next watch; it returns how many resources the response held.
func (w *EDSWatcher) Next(b testing.TB) int {
	var n int
	if w.w.Delta {
		r := <-w.dch
		w.sub.SetReturnedResources(r.GetReturnedResources())
		resp, err := r.GetDeltaDiscoveryResponse()
		if err != nil {
			b.Fatal(err)
		}
		n = len(resp.GetResources())
	} else {
		r := <-w.ch
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
