package publish

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Cache is the library cache the control plane serves from (--cache).
type Cache string

const (
	// SnapshotCache is go-control-plane's SnapshotCache: one snapshot per publish, the
	// whole state versioned by the workbench's labels.
	SnapshotCache Cache = "snapshot"
	// SnapshotCacheNoADS is the same SnapshotCache built without the ADS rule
	// (NewSnapshotCacheNoADS: cachev3.NewSnapshotCache(false, ...)). With the rule
	// (pkg/cache/v3/simple.go, respond: "for ADS, the request names must match the
	// snapshot names / if they do not, then the watch is never responded") a SotW
	// request that names resources is answered only when its names cover every resource
	// of the type in the snapshot (superset): a request for a subset, such as Envoy's SDS
	// request for the one secret a listener references while the snapshot holds more,
	// is never answered. Without it such a request is answered with the resources it
	// names. The price is what the rule buys: a SotW response of a type then always
	// carries the snapshot's whole set of that type under the snapshot's version, so a
	// client that ACKs version V of a type was sent every resource of V of that type;
	// and without ads the cache answers open watches in map order
	// (respondSOTWWatches, respondDeltaWatches: "If ADS is enabled we need to order
	// response watches"), so one SetSnapshot may answer EDS before CDS or RDS before
	// LDS on the one ADS stream. The SotW options are the snapshot cache's.
	SnapshotCacheNoADS Cache = "snapshot-noads"
	// LinearCache is one go-control-plane LinearCache per type, combined for ADS with a
	// MuxCache: a publish hands each type only what changed, and each type's version is
	// the cache's own counter behind a per-instance prefix.
	LinearCache Cache = "linear"
	// IndexedCache is the workbench's own cache (shared/indexcache): the LinearCache's
	// semantics at the cost of what changed, the protocol's floor.
	IndexedCache Cache = "indexed"
)

// Caches are the cache kinds, in the order they are listed to a user.
var Caches = []Cache{SnapshotCache, SnapshotCacheNoADS, LinearCache, IndexedCache}

// CacheWant is what an unknown cache name is refused with: the known names.
const CacheWant = "want snapshot, snapshot-noads, linear or indexed"

// ParseCache validates a --cache value; empty is SnapshotCache.
func ParseCache(s string) (Cache, error) {
	switch Cache(s) {
	case SnapshotCache, SnapshotCacheNoADS, LinearCache, IndexedCache:
		return Cache(s), nil
	case "":
		return SnapshotCache, nil
	}
	return "", fmt.Errorf("unknown cache %q (%s)", s, CacheWant)
}

// IsSnapshot says the cache is go-control-plane's SnapshotCache, with the ADS rule or
// without: one snapshot per publish, the workbench's labels its versions.
func (c Cache) IsSnapshot() bool { return c == SnapshotCache || c == SnapshotCacheNoADS }

// VersionsPerType says the cache versions each type itself and records what it sent,
// not what was ACKed (LinearCache, IndexedCache): SotW versions are per type and a NACK
// holds, whatever is asked.
func (c Cache) VersionsPerType() bool { return c == LinearCache || c == IndexedCache }

// StatePublisher is the state side as the control plane uses it, whichever cache it
// feeds: Publisher (SnapshotCache) and LinearPublisher (LinearCache per type).
type StatePublisher interface {
	// Publish makes set the state served and records it.
	Publish(ctx context.Context, set *resources.Set) error
	// Current is the last published set (nil before the first publish).
	Current() *resources.Set
	// Versions are the per-type versions served: SotW version_info, delta
	// system_version_info.
	Versions() map[resources.Type]string
	// Describe names and hashes a resource on the wire, for the transports.
	Describe(a *anypb.Any) (name, hash string)
	// Strategy is how SotW type versions move.
	Strategy() VersionStrategy
}

var (
	_ StatePublisher = (*Publisher)(nil)
	_ StatePublisher = (*LinearPublisher)(nil)
)

// LinearConfig configures NewLinearPublisher.
type LinearConfig struct {
	// Recorder records each publish (nil: not recorded).
	Recorder *xdslog.Recorder
	// VersionPrefix goes before every version the caches give out (NewVersionPrefix when
	// empty). It must differ per control-plane instance, so that a restarted server
	// never gives out a version an earlier one did (contour#6250): the library answers
	// a request whose version lacks its prefix with everything it holds.
	VersionPrefix string
	// Node, when the control plane serves one state per node, is the node whose state
	// this publisher holds: the publish events name it.
	Node string
}

// NewVersionPrefix returns a prefix no other start of this machine's control plane
// has used: the start time in nanoseconds, base 36, and a dot ("mh3k2x0a1b.").
func NewVersionPrefix() string {
	n := time.Now().UnixNano()
	for {
		last := lastPrefix.Load()
		if n <= last {
			n = last + 1
		}
		if lastPrefix.CompareAndSwap(last, n) {
			return strconv.FormatInt(n, 36) + "."
		}
	}
}

// lastPrefix makes two starts in one process within a clock tick differ too.
var lastPrefix atomic.Int64

// LinearPublisher feeds one go-control-plane LinearCache per type, combined for ADS in a
// MuxCache that both transports serve. A publish diffs the new set against the current
// one per type by content hash and calls UpdateResources on each changed type's cache
// with only the changed and deleted names; unchanged types are not touched, so their
// versions do not move. What the library then sends follows from the LinearCache: in
// SotW, LDS and CDS responses carry the full state and RDS and EDS only the changed
// resources; in delta, only the changed and removed ones.
//
// The versions are per type by construction (the cache's counter behind the prefix), so
// only the PerType strategy can be honoured. The cache serves every node alike.
type LinearPublisher struct {
	perTypeState
	caches map[resources.Type]*cachev3.LinearCache
	mux    *cachev3.MuxCache
}

// perTypeState is what the two per-type publishers (LinearPublisher, IndexedPublisher)
// keep alike: the published set, each type's version (the prefix and the number of
// updates the type's cache received), and the names of what they published.
type perTypeState struct {
	rec    *xdslog.Recorder
	node   string
	prefix string

	mu       sync.Mutex
	current  *resources.Set
	counters map[resources.Type]uint64
	names    nameTable
}

func newPerTypeState(cfg LinearConfig) perTypeState {
	if cfg.VersionPrefix == "" {
		cfg.VersionPrefix = NewVersionPrefix()
	}
	return perTypeState{rec: cfg.Recorder, node: cfg.Node, prefix: cfg.VersionPrefix,
		counters: make(map[resources.Type]uint64, len(resources.Types))}
}

// advanceLocked makes set current after its change reached the caches.
func (p *perTypeState) advanceLocked(set *resources.Set, change resources.Change) {
	for _, t := range change.Types() {
		p.counters[t]++
	}
	p.current = set
	p.names.advance(change)
}

// VersionPrefix is the prefix of every version this instance gives out.
func (p *perTypeState) VersionPrefix() string { return p.prefix }

// Strategy is PerType: a type's version moves only when the type changes.
func (p *perTypeState) Strategy() VersionStrategy { return PerType }

// Current returns the last published set (nil before the first publish).
func (p *perTypeState) Current() *resources.Set {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current
}

// Versions returns each type's cache version: the prefix and the number of updates the
// type's cache received (the LinearCache counts one per UpdateResources).
func (p *perTypeState) Versions() map[resources.Type]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[resources.Type]string, len(resources.Types))
	for _, t := range resources.Types {
		out[t] = p.prefix + strconv.FormatUint(p.counters[t], 10)
	}
	return out
}

// Describe is Publisher.Describe over this publisher's sets. The per-type caches' delta
// resource version is the same hash of the same bytes.
func (p *perTypeState) Describe(a *anypb.Any) (name, hash string) { return p.names.describe(a) }

// NewLinearPublisher builds the four caches, their mux and a publisher with nothing
// published yet.
func NewLinearPublisher(cfg LinearConfig) *LinearPublisher {
	p := &LinearPublisher{
		perTypeState: newPerTypeState(cfg),
		caches:       make(map[resources.Type]*cachev3.LinearCache, len(resources.Types)),
	}
	byURL := make(map[string]cachev3.Cache, len(resources.Types))
	for _, t := range resources.Types {
		c := cachev3.NewLinearCache(t.URL(), cachev3.WithVersionPrefix(p.prefix), cachev3.WithLogger(log.LoggerFuncs{}))
		p.caches[t] = c
		byURL[t.URL()] = c
	}
	p.mux = &cachev3.MuxCache{
		Classify:      func(r *cachev3.Request) string { return r.GetTypeUrl() },
		ClassifyDelta: func(r *cachev3.DeltaRequest) string { return r.GetTypeUrl() },
		Caches:        byURL,
	}
	return p
}

// Cache is the MuxCache the transports serve.
func (p *LinearPublisher) Cache() cachev3.Cache { return p.mux }

// Publish hands each type's cache what changed from the current set, recording the
// publish first (exactly as Publisher does: UpdateResources may send at once). A set
// rebuilt from the current one (resources.Rebuild) carries its change, so the publish
// costs O(what changed); any other set is compared whole and checked as the snapshot
// cache would check it.
func (p *LinearPublisher) Publish(_ context.Context, set *resources.Set) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	change, err := changeFrom(p.current, set)
	if err != nil {
		return err
	}
	recordPublish(p.rec, p.node, set, p.current == nil, change)
	byType := updatesByType(change)
	for _, t := range change.Types() {
		if err := p.caches[t].UpdateResources(byType[t].toUpdate, byType[t].toDelete); err != nil {
			return fmt.Errorf("publish version %s: update %s: %w", set.Version, t, err)
		}
		p.counters[t]++
	}
	p.current = set
	p.names.advance(change)
	return nil
}

// changeFrom is what a per-type publisher hands its caches for set after current: the
// recorded change of a set rebuilt from current, O(what changed); any other set is
// compared whole and checked as the snapshot cache would check it (the same refusal as
// Publisher's).
func changeFrom(current, set *resources.Set) (resources.Change, error) {
	if set == nil {
		return resources.Change{}, fmt.Errorf("publish: nil resource set")
	}
	if !set.RebuiltFrom(current) {
		if _, err := set.Snapshot(resources.UniformVersions(set.Version)); err != nil {
			return resources.Change{}, fmt.Errorf("publish version %s: %w", set.Version, err)
		}
	}
	return resources.Diff(current, set), nil
}

// typeUpdate is one type's UpdateResources arguments.
type typeUpdate struct {
	toUpdate map[string]types.Resource
	toDelete []string
}

// updatesByType splits a change into each type's UpdateResources arguments.
func updatesByType(change resources.Change) map[resources.Type]*typeUpdate {
	byType := map[resources.Type]*typeUpdate{}
	for _, e := range change.Edits {
		u := byType[e.Type]
		if u == nil {
			u = &typeUpdate{toUpdate: map[string]types.Resource{}}
			byType[e.Type] = u
		}
		if e.New != nil {
			u.toUpdate[e.Name] = e.New.Resource
		} else {
			u.toDelete = append(u.toDelete, e.Name)
		}
	}
	return byType
}
