// Package indexcache is the workbench's reference for what the xDS protocol itself
// requires of a server per change, not a product cache: a go-control-plane cachev3.Cache
// (CreateWatch, CreateDeltaWatch) that the library's own SotW and delta servers serve
// unchanged, with the semantics of go-control-plane v0.14.0's LinearCache
// (pkg/cache/v3/linear.go) and the cost of only what changed (`lab --cache indexed`).
//
// The LinearCache walks every subscribed name on every change (computeResourceChange),
// copies the client's whole returned-versions map into every response
// (computeResponse's maps.Clone) and files and unfiles a watch under every name each time
// the server opens it again (trackWatch, removeWatch). This cache keeps instead, per type:
//
//   - an index from resource name to the registrations subscribed to it, and a set of the
//     wildcard ones, so an update touches only the registrations of the changed names;
//   - per-resource versions: the content hash (cachev3.HashResource of the deterministic
//     marshal, the delta version) and the cache version at the resource's last update
//     (what the LinearCache's SotW subscription records);
//   - a registration that outlives its watch, found again when the server opens the
//     next watch on the same subscription (delta: by the identity of the subscription's
//     name map; SotW: of its returned-versions map; the library keeps each for the life
//     of a stream's type): re-opening after an ACK costs O(names the request
//     (un)subscribes and names that changed meanwhile), not O(subscription), apart from
//     one lookup per name a SotW request repeats;
//   - responses that carry only what changed and apply it to the client's
//     returned-versions map when the server takes the response (GetReturnedResources),
//     not a copy of that map per response (returned.go).
//
// What stays O(N) is the protocol's: a SotW LDS or CDS response carries every resource
// (xDS protocol, "Grouping Resources into Responses": full-state types), and a SotW
// request repeats every subscribed name (xDS protocol, "How the client specifies what
// resources to return"), from which the library's SotW server builds a new subscription
// map per request (stream.Subscription.SetResourceSubscription) and this cache looks each
// name up once to find the ones that differ. A new stream, a wildcard
// subscription and a reconnect are walked whole, as they must be.
package indexcache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// Cache serves the types it was built for; Update changes one type's resources.
type Cache struct {
	prefix string

	mu    sync.Mutex
	types map[string]*typeState
	// returnedMu orders the reads of a client's returned-versions map (under mu) with a
	// response's changes applied to it by the server's stream goroutine (returned.go). It
	// is never held while sending, so a full channel cannot block the server's apply.
	returnedMu sync.Mutex

	// dropRemovals breaks the cache on purpose (BreakForTest): the differential test
	// must catch it.
	dropRemovals bool
}

var _ cachev3.Cache = (*Cache)(nil)

// New returns an empty cache for typeURLs. prefix goes before every version it gives out
// (like the LinearCache's WithVersionPrefix): a SotW request whose version_info lacks it
// is answered with everything subscribed, as from a client that has nothing.
func New(prefix string, typeURLs ...string) *Cache {
	c := &Cache{prefix: prefix, types: make(map[string]*typeState, len(typeURLs))}
	for _, u := range typeURLs {
		c.types[u] = newTypeState(u)
	}
	return c
}

// entry is one resource as served.
type entry struct {
	name  string
	bytes []byte
	// hash is the delta version (cachev3.HashResource of bytes); cacheVersion the type's
	// version when the resource last changed, what a SotW subscription records.
	hash, cacheVersion string
}

func (e *entry) version(delta bool) string {
	if delta {
		return e.hash
	}
	return e.cacheVersion
}

// typeState is one type's resources, index and registrations.
type typeState struct {
	url string
	// fullState: SotW responses carry every subscribed resource (LDS, CDS).
	fullState bool
	version   uint64
	resources map[string]*entry
	// byName and wildcard are the index: who to look at when a name changes.
	byName   map[string]map[*reg]struct{}
	wildcard map[*reg]struct{}
	// deltaRegs finds a delta registration again by its subscription's name map,
	// sotwRegs a SotW one by its returned-versions map (the SotW server replaces the
	// name map with every request).
	deltaRegs, sotwRegs map[unsafe.Pointer]*reg
	// detached are registrations without an open watch, with the epoch (updates
	// so far) when they lost it: reaped two updates later (reap).
	detached map[*reg]uint64
	epoch    uint64
}

func newTypeState(url string) *typeState {
	return &typeState{
		url: url, fullState: cachev3.ResourceRequiresFullStateInSotw(url),
		resources: map[string]*entry{}, byName: map[string]map[*reg]struct{}{},
		wildcard: map[*reg]struct{}{}, deltaRegs: map[unsafe.Pointer]*reg{}, sotwRegs: map[unsafe.Pointer]*reg{}, detached: map[*reg]uint64{},
	}
}

func (t *typeState) versionString(prefix string) string {
	return prefix + strconv.FormatUint(t.version, 10)
}

// TypeUpdate is one type's part of an update: resources to set by name, names to delete.
type TypeUpdate struct {
	TypeURL string
	Set     map[string]types.Resource
	Delete  []string
}

// Update sets and deletes resources of one type, as the LinearCache's UpdateResources.
func (c *Cache) Update(typeURL string, toUpdate map[string]types.Resource, toDelete []string) error {
	return c.UpdateAll([]TypeUpdate{{TypeURL: typeURL, Set: toUpdate, Delete: toDelete}}, nil)
}

// UpdateAll applies the types' updates in order, each as the LinearCache's
// UpdateResources: the type's version moves once and every watch of a changed name is
// answered before the next type is updated (so CDS before EDS, LDS before RDS when given
// in that order: ordered ADS). A bad update (unknown type, nil resource, a name that is
// not the resource's, a name both set and deleted, a resource that does not marshal) is
// refused naming it before anything is applied: nothing served changes. accepted, when
// not nil, runs once the update is validated and before anything is sent (the publisher
// records the publish there).
func (c *Cache) UpdateAll(updates []TypeUpdate, accepted func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	built := make([][]*entry, len(updates))
	for i, u := range updates {
		if _, ok := c.types[u.TypeURL]; !ok {
			return fmt.Errorf("update: type %s is not served by this cache", u.TypeURL)
		}
		b, err := buildEntries(u.TypeURL, u.Set, u.Delete)
		if err != nil {
			return fmt.Errorf("update %s: %w", u.TypeURL, err)
		}
		built[i] = b
	}
	if accepted != nil {
		accepted()
	}
	for i, u := range updates {
		c.apply(c.types[u.TypeURL], built[i], u.Delete)
	}
	return nil
}

// apply is one type's validated update.
func (c *Cache) apply(t *typeState, built []*entry, toDelete []string) {
	t.version++
	version := t.versionString(c.prefix)
	changed := make([]string, 0, len(built)+len(toDelete))
	for _, e := range built {
		e.cacheVersion = version
		t.resources[e.name] = e
		changed = append(changed, e.name)
	}
	for _, name := range toDelete {
		delete(t.resources, name)
		changed = append(changed, name)
	}
	c.notify(t, changed)
}

// buildEntries marshals and hashes what an update of typeURL sets, refusing it whole on
// any error, a resource of another type included (it would reach clients under the
// wrong type URL).
func buildEntries(typeURL string, toUpdate map[string]types.Resource, toDelete []string) ([]*entry, error) {
	for _, name := range toDelete {
		if _, both := toUpdate[name]; both {
			return nil, fmt.Errorf("resource %q both set and deleted", name)
		}
	}
	out := make([]*entry, 0, len(toUpdate))
	for name, r := range toUpdate {
		if r == nil || reflect.ValueOf(r).IsNil() {
			return nil, fmt.Errorf("resource %q is nil", name)
		}
		if got := resource.APITypePrefix + string(r.ProtoReflect().Descriptor().FullName()); got != typeURL {
			return nil, fmt.Errorf("resource %q is a %s, not a %s", name, strings.TrimPrefix(got, resource.APITypePrefix), strings.TrimPrefix(typeURL, resource.APITypePrefix))
		}
		if got := cachev3.GetResourceName(r); got != name {
			return nil, fmt.Errorf("resource %q is named %q", name, got)
		}
		b, err := cachev3.MarshalResource(r)
		if err != nil {
			return nil, fmt.Errorf("resource %q: %w", name, err)
		}
		out = append(out, &entry{name: name, bytes: b, hash: cachev3.HashResource(b)})
	}
	return out, nil
}

// Fetch is the REST API, which the workbench does not serve.
func (c *Cache) Fetch(context.Context, *cachev3.Request) (cachev3.Response, error) {
	return nil, errors.New("fetch: the indexed cache serves streams only (REST is not served)")
}
