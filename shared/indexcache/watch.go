package indexcache

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// reg is one client subscription to one type, filed in the index under the names it
// subscribes to (or among the wildcard ones), with at most one open watch.
type reg struct {
	delta bool
	key   unsafe.Pointer // the subscription's name map (delta: found again by it)
	sub   cachev3.Subscription
	// names and wildcard are what the index holds for it (its own copy: the server
	// changes the subscription's map between watches).
	names    map[string]struct{}
	wildcard bool

	// The open watch, if any; gen tells a stale cancel from the current one.
	open bool
	gen  uint64
	req  *cachev3.Request
	ch   chan cachev3.Response
	dreq *cachev3.DeltaRequest
	dch  chan cachev3.DeltaResponse
	// dirty (delta) are names that changed while no watch was open.
	dirty map[string]struct{}
	// returned is the returned-versions map the last response updates (its identity):
	// a later watch whose subscription holds another one is computed whole.
	returned unsafe.Pointer
}

func mapKey[M any](m M) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }

// CreateWatch opens a SotW watch, answered at once when the subscription differs from the
// cache, as the LinearCache's CreateWatch: a request without version_info, or with one
// this cache did not give out, is answered even when nothing differs. A subscription
// this cache registered before (the same stream's type, found by its returned-versions
// map, which the library keeps for the stream's life) is compared only on the names that
// changed since its last response, the names its last response carried (the SotW ADS
// server may have dropped it) and the names this request adds or drops: re-reading the
// request's names is what the protocol asks, re-filing them is not.
func (c *Cache) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, ch chan cachev3.Response) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.types[req.GetTypeUrl()]
	if !ok {
		return nil, fmt.Errorf("request type %s is not served by this cache", req.GetTypeUrl())
	}
	replyEvenIfEmpty := req.GetVersionInfo() == "" || !strings.HasPrefix(req.GetVersionInfo(), c.prefix)
	r, candidates := c.reattachSotW(t, sub, replyEvenIfEmpty)
	r.sub, r.req, r.ch = sub, req, ch
	if c.respond(t, r, candidates, replyEvenIfEmpty) {
		return func() {}, nil
	}
	return c.openWatch(t, r), nil
}

// openWatch marks r's watch open and returns its cancel, which leaves r filed (detached)
// for the next watch: a stale cancel (an older watch of r) does nothing.
func (c *Cache) openWatch(t *typeState, r *reg) func() {
	r.open = true
	r.gen++
	delete(t.detached, r)
	gen := r.gen
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if r.open && r.gen == gen {
			r.open = false
			t.detached[r] = t.epoch
		}
	}
}

// reattachSotW finds the registration of a SotW subscription again and re-files only
// the names its subscription gained or lost, returning the names to compare; a
// subscription it cannot vouch for (new, wildcard changed, a version_info not this
// cache's) is filed anew and compared whole.
func (c *Cache) reattachSotW(t *typeState, sub cachev3.Subscription, whole bool) (*reg, []string) {
	key := mapKey(sub.ReturnedResources())
	r, ok := t.sotwRegs[key]
	if key == nil {
		ok = false // no map to know the stream by: filed anew each time, never found again
	}
	if ok && !r.open && !whole && r.wildcard == sub.IsWildcard() {
		candidates := make([]string, 0, len(r.dirty))
		for n := range r.dirty {
			candidates = append(candidates, n)
		}
		clear(r.dirty)
		return r, append(candidates, t.refile(r, sub.SubscribedResources())...)
	}
	if ok {
		t.drop(r)
	}
	r = &reg{key: key, dirty: map[string]struct{}{}, returned: key}
	if key != nil {
		t.sotwRegs[key] = r
	}
	t.file(r, sub)
	return r, c.allCandidates(t, sub)
}

// refile brings r's index entries to subscribed, touching only the names that differ,
// and returns them: one lookup per subscribed name, no allocation when none differs.
func (t *typeState) refile(r *reg, subscribed map[string]struct{}) []string {
	var differ []string
	for n := range subscribed {
		if _, in := r.names[n]; !in && n != "*" {
			t.fileName(r, n)
			differ = append(differ, n)
		}
	}
	if len(r.names) != len(subscribed) {
		for n := range r.names {
			if _, in := subscribed[n]; !in {
				t.unfileName(r, n)
				differ = append(differ, n)
			}
		}
	}
	return differ
}

// CreateDeltaWatch opens a delta watch, as the LinearCache's CreateDeltaWatch: the first
// request of a wildcard subscription is answered even when empty. A subscription this
// cache registered before (the same stream's type) is compared only on the names that
// changed since its last watch and the names this request (un)subscribes.
func (c *Cache) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.types[req.GetTypeUrl()]
	if !ok {
		return nil, fmt.Errorf("request type %s is not served by this cache", req.GetTypeUrl())
	}
	replyEvenIfEmpty := sub.IsWildcard() && req.GetResponseNonce() == ""
	r, candidates := c.reattach(t, req, sub)
	r.sub, r.dreq, r.dch = sub, req, ch
	if c.respond(t, r, candidates, replyEvenIfEmpty) {
		return nil, nil
	}
	return c.openWatch(t, r), nil
}

// reattach finds the registration of a delta subscription again and brings its index
// entries up to date with the request, returning the names to compare; a subscription
// it cannot vouch for (new, wildcard changed, returned map replaced) is filed anew and
// compared whole.
func (c *Cache) reattach(t *typeState, req *cachev3.DeltaRequest, sub cachev3.Subscription) (*reg, []string) {
	key := mapKey(sub.SubscribedResources())
	r, ok := t.deltaRegs[key]
	if ok && !r.open && r.wildcard == sub.IsWildcard() && r.returned == mapKey(sub.ReturnedResources()) {
		candidates := make([]string, 0, len(r.dirty)+len(req.GetResourceNamesSubscribe())+len(req.GetResourceNamesUnsubscribe()))
		for n := range r.dirty {
			candidates = append(candidates, n)
		}
		clear(r.dirty)
		for _, n := range req.GetResourceNamesSubscribe() {
			if _, in := sub.SubscribedResources()[n]; in {
				t.fileName(r, n)
			}
			candidates = append(candidates, n)
		}
		for _, n := range req.GetResourceNamesUnsubscribe() {
			if _, in := sub.SubscribedResources()[n]; !in {
				t.unfileName(r, n)
			}
			candidates = append(candidates, n)
		}
		return r, candidates
	}
	if ok {
		t.drop(r)
	}
	r = &reg{delta: true, key: key, dirty: map[string]struct{}{}, returned: mapKey(sub.ReturnedResources())}
	t.deltaRegs[key] = r
	t.file(r, sub)
	return r, c.allCandidates(t, sub)
}

// allCandidates is every name a subscription's answer depends on: what it subscribes to
// (every resource when wildcard) and what the client has.
func (c *Cache) allCandidates(t *typeState, sub cachev3.Subscription) []string {
	c.returnedMu.Lock()
	defer c.returnedMu.Unlock()
	var out []string
	if sub.IsWildcard() {
		out = make([]string, 0, len(t.resources)+len(sub.ReturnedResources()))
		for n := range t.resources {
			out = append(out, n)
		}
	} else {
		out = make([]string, 0, len(sub.SubscribedResources())+len(sub.ReturnedResources()))
		for n := range sub.SubscribedResources() {
			out = append(out, n)
		}
	}
	for n := range sub.ReturnedResources() {
		out = append(out, n)
	}
	return out
}

// file indexes r under what sub subscribes to.
func (t *typeState) file(r *reg, sub cachev3.Subscription) {
	r.wildcard = sub.IsWildcard()
	if r.wildcard {
		t.wildcard[r] = struct{}{}
	}
	r.names = make(map[string]struct{}, len(sub.SubscribedResources()))
	for n := range sub.SubscribedResources() {
		t.fileName(r, n)
	}
}

func (t *typeState) fileName(r *reg, n string) {
	if n == "*" {
		return
	}
	r.names[n] = struct{}{}
	w := t.byName[n]
	if w == nil {
		w = map[*reg]struct{}{}
		t.byName[n] = w
	}
	w[r] = struct{}{}
}

func (t *typeState) unfileName(r *reg, n string) {
	delete(r.names, n)
	if w := t.byName[n]; w != nil {
		delete(w, r)
		if len(w) == 0 {
			delete(t.byName, n)
		}
	}
}

// unfile removes r from the index: O(its names), once per registration dropped.
func (t *typeState) unfile(r *reg) {
	delete(t.wildcard, r)
	for n := range r.names {
		t.unfileName(r, n)
	}
}

// drop forgets a registration.
func (t *typeState) drop(r *reg) {
	t.unfile(r)
	delete(t.detached, r)
	regs := t.sotwRegs
	if r.delta {
		regs = t.deltaRegs
	}
	if regs[r.key] == r {
		delete(regs, r.key)
	}
}

// notify answers the open watches of the changed names, once each, and marks the
// detached registrations of those names dirty: O(changed names x their
// registrations + wildcard registrations).
func (c *Cache) notify(t *typeState, changed []string) {
	t.epoch++
	c.reap(t)
	hit := map[*reg][]string{}
	mark := func(r *reg, n string) {
		switch {
		case r.open:
			hit[r] = append(hit[r], n)
		default:
			r.dirty[n] = struct{}{}
		}
	}
	for _, n := range changed {
		for r := range t.byName[n] {
			mark(r, n)
		}
		for r := range t.wildcard {
			mark(r, n)
		}
	}
	for r, names := range hit {
		c.respond(t, r, names, false)
	}
}

// reap drops the delta registrations whose stream has gone quiet for two updates (its
// watch cancelled, or answered and never opened again): a stream that ended leaves one
// behind. A live one dropped here is filed anew, whole, on its next request.
func (c *Cache) reap(t *typeState) {
	for r, at := range t.detached {
		if t.epoch-at > 2 {
			t.drop(r)
		}
	}
}
