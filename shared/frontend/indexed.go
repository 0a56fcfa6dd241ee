package frontend

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/indexcache"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

var _ StatePublisher = (*IndexedPublisher)(nil)

// IndexedPublisher feeds the workbench's indexed cache (shared/indexcache): the
// LinearCache's semantics at the cost of what changed. A publish hands each changed type
// only its changed and deleted resources, as LinearPublisher does, and records and names
// them the same way; the versions are the cache's own, per type, behind a per-instance
// prefix. The cache serves every node alike.
type IndexedPublisher struct {
	rec    *xdslog.Recorder
	node   string
	prefix string
	cache  *indexcache.Cache

	mu       sync.Mutex
	current  *resources.Set
	counters map[resources.Type]uint64 // updates per type: the cache's version
	names    nameTable
}

// NewIndexedPublisher builds the cache and a publisher with nothing published yet; cfg
// is read as for NewLinearPublisher.
func NewIndexedPublisher(cfg LinearConfig) *IndexedPublisher {
	if cfg.VersionPrefix == "" {
		cfg.VersionPrefix = NewVersionPrefix()
	}
	urls := make([]string, len(resources.Types))
	for i, t := range resources.Types {
		urls[i] = t.URL()
	}
	return &IndexedPublisher{
		rec: cfg.Recorder, node: cfg.Node, prefix: cfg.VersionPrefix,
		cache:    indexcache.New(cfg.VersionPrefix, urls...),
		counters: make(map[resources.Type]uint64, len(resources.Types)),
	}
}

// Cache is what the transports serve.
func (p *IndexedPublisher) Cache() cachev3.Cache { return p.cache }

// VersionPrefix is the prefix of every version this instance gives out.
func (p *IndexedPublisher) VersionPrefix() string { return p.prefix }

// Strategy is PerType: a type's version moves only when it changes.
func (p *IndexedPublisher) Strategy() VersionStrategy { return PerType }

// Publish is LinearPublisher.Publish over the indexed cache: O(what changed) for a set
// rebuilt from the current one. The changed types are updated in CDS, EDS, LDS, RDS
// order (ordered ADS). An update the cache refuses changes nothing served.
func (p *IndexedPublisher) Publish(_ context.Context, set *resources.Set) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	change, err := changeFrom(p.current, set)
	if err != nil {
		return err
	}
	byType := updatesByType(change)
	var updates []indexcache.TypeUpdate
	for _, t := range change.Types() {
		updates = append(updates, indexcache.TypeUpdate{TypeURL: t.URL(), Set: byType[t].toUpdate, Delete: byType[t].toDelete})
	}
	// Recorded once the cache accepted it and before it sends, as LinearPublisher does.
	first := p.current == nil
	record := func() { recordPublish(p.rec, p.node, set, first, change) }
	if err := p.cache.UpdateAll(updates, record); err != nil {
		return fmt.Errorf("publish version %s: %w", set.Version, err)
	}
	for _, t := range change.Types() {
		p.counters[t]++
	}
	p.current = set
	p.names.advance(change)
	return nil
}

// Current returns the last published set (nil before the first publish).
func (p *IndexedPublisher) Current() *resources.Set {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current
}

// Versions returns each type's version: the prefix and the number of updates of the type.
func (p *IndexedPublisher) Versions() map[resources.Type]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[resources.Type]string, len(resources.Types))
	for _, t := range resources.Types {
		out[t] = p.prefix + strconv.FormatUint(p.counters[t], 10)
	}
	return out
}

// Describe is Publisher.Describe over this publisher's sets.
func (p *IndexedPublisher) Describe(a *anypb.Any) (name, hash string) { return p.names.describe(a) }
