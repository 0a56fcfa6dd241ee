package publish

import (
	"context"
	"fmt"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/xds-workbench/lab/shared/indexcache"
	"github.com/xds-workbench/lab/shared/resources"
)

var _ StatePublisher = (*IndexedPublisher)(nil)

// IndexedPublisher feeds the workbench's indexed cache (shared/indexcache): the
// LinearCache's semantics at the cost of what changed. A publish hands each changed type
// only its changed and deleted resources, as LinearPublisher does, and records and names
// them the same way; the versions are the cache's own, per type, behind a per-instance
// prefix. The cache serves every node alike.
type IndexedPublisher struct {
	perTypeState
	cache *indexcache.Cache
}

// NewIndexedPublisher builds the cache and a publisher with nothing published yet; cfg
// is read as for NewLinearPublisher.
func NewIndexedPublisher(cfg LinearConfig) *IndexedPublisher {
	urls := make([]string, len(resources.Types))
	for i, t := range resources.Types {
		urls[i] = t.URL()
	}
	p := &IndexedPublisher{perTypeState: newPerTypeState(cfg)}
	p.cache = indexcache.New(p.prefix, urls...)
	return p
}

// Cache is what the transports serve.
func (p *IndexedPublisher) Cache() cachev3.Cache { return p.cache }

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
	p.advanceLocked(set, change)
	return nil
}
