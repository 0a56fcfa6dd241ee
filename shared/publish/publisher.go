package publish

import (
	"context"
	"fmt"
	"sync"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// VersionStrategy says how SotW type versions move.
type VersionStrategy string

const (
	// Uniform gives all four types the publish's label: a change to one type re-sends
	// all four (the teaching server's behaviour).
	Uniform VersionStrategy = "uniform"
	// PerType moves a type's version only when its content changes.
	PerType VersionStrategy = "per-type"
)

// ParseVersionStrategy validates a --sotw-versions value.
func ParseVersionStrategy(s string) (VersionStrategy, error) {
	switch VersionStrategy(s) {
	case Uniform, PerType:
		return VersionStrategy(s), nil
	case "":
		return Uniform, nil
	}
	return "", fmt.Errorf("unknown version strategy %q (want uniform or per-type)", s)
}

// SnapshotSetter is what a Publisher needs from the library's cache: setting one node's
// snapshot. go-control-plane's cachev3.SnapshotCache satisfies it; the transports serve
// the same cache through its cachev3.Cache side.
type SnapshotSetter interface {
	SetSnapshot(ctx context.Context, node string, snapshot cachev3.ResourceSnapshot) error
}

// NewSnapshotCache returns the library's snapshot cache as --cache snapshot serves it,
// for either protocol: ads=true (a SotW response is sent only when the request's names cover
// the snapshot's) and IDHash (the node ID is the cache key). logger nil discards the
// library's logs.
func NewSnapshotCache(logger log.Logger) cachev3.SnapshotCache {
	return newSnapshotCache(true, logger)
}

// NewSnapshotCacheNoADS is NewSnapshotCache without the ADS rule (ads=false,
// SnapshotCacheNoADS): a SotW request naming a subset of a type's resources is answered
// with that subset, and open watches are answered in no particular type order.
func NewSnapshotCacheNoADS(logger log.Logger) cachev3.SnapshotCache {
	return newSnapshotCache(false, logger)
}

func newSnapshotCache(ads bool, logger log.Logger) cachev3.SnapshotCache {
	if logger == nil {
		logger = log.LoggerFuncs{}
	}
	return cachev3.NewSnapshotCache(ads, cachev3.IDHash{}, logger)
}

// PublisherConfig configures NewPublisher.
type PublisherConfig struct {
	// Cache receives the snapshots; required.
	Cache SnapshotSetter
	// NodeID is the node served (resources.NodeID when empty).
	NodeID string
	// Recorder records each publish (nil: not recorded).
	Recorder *xdslog.Recorder
	// Strategy says how type versions move (Uniform when empty). Delta resources are
	// versioned by content hash whatever the strategy; it moves system_version_info.
	Strategy VersionStrategy
	// PerNode says the control plane serves one state per node (one publisher each): the
	// publish events then name NodeID.
	PerNode bool
}

// Publisher is the state side of the control plane: the one place a validated resource
// set becomes the library snapshot served to one node. It assigns type versions, checks
// consistency, records the publish and sets the snapshot. It knows nothing of the
// transports: any number of them, in either protocol, may serve the cache it feeds, and
// name what they send with its Describe.
type Publisher struct {
	cache    SnapshotSetter
	nodeID   string
	recNode  string // the node the publish events name ("" for the one state served)
	rec      *xdslog.Recorder
	strategy VersionStrategy

	mu       sync.Mutex
	current  *resources.Set
	versions map[resources.Type]string
	names    nameTable
}

// NewPublisher validates cfg and returns a publisher with nothing published yet.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	if cfg.Cache == nil {
		return nil, fmt.Errorf("publisher: no cache")
	}
	strategy, err := ParseVersionStrategy(string(cfg.Strategy))
	if err != nil {
		return nil, err
	}
	if cfg.NodeID == "" {
		cfg.NodeID = resources.NodeID
	}
	p := &Publisher{cache: cfg.Cache, nodeID: cfg.NodeID, rec: cfg.Recorder, strategy: strategy}
	if cfg.PerNode {
		p.recNode = cfg.NodeID
	}
	return p, nil
}

// NodeID returns the node served.
func (p *Publisher) NodeID() string { return p.nodeID }

// Strategy returns the version strategy in force.
func (p *Publisher) Strategy() VersionStrategy { return p.strategy }

// Publish validates set against the previous one, sets the snapshot and records it.
func (p *Publisher) Publish(ctx context.Context, set *resources.Set) error {
	if set == nil {
		return fmt.Errorf("publish: nil resource set")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	change := resources.Diff(p.current, set)
	changed := change.Types()
	versions := resources.UniformVersions(set.Version)
	if p.strategy == PerType && p.current != nil {
		changedSet := map[resources.Type]bool{}
		for _, t := range changed {
			changedSet[t] = true
		}
		for _, t := range resources.Types {
			if !changedSet[t] {
				versions[t] = p.versions[t]
			}
		}
	}
	snap, err := set.Snapshot(versions)
	if err != nil {
		return fmt.Errorf("publish version %s: %w", set.Version, err)
	}
	// Record before setting: SetSnapshot may trigger sends at once, and the log must show
	// the publish first.
	recordPublish(p.rec, p.recNode, set, p.current == nil, change)
	if err := p.cache.SetSnapshot(ctx, p.nodeID, snap); err != nil {
		return fmt.Errorf("publish version %s: set snapshot: %w", set.Version, err)
	}
	p.current, p.versions = set, versions
	p.names.advance(change)
	return nil
}

// recordPublish writes the publish event both publishers write: the first in full
// (every resource of set with its content hash), each later one as its change (what was
// added or modified, and what was deleted), with the types that changed; node names the
// node when each node has its own state.
func recordPublish(rec *xdslog.Recorder, node string, set *resources.Set, first bool, change resources.Change) {
	types := change.Types()
	changed := make([]string, len(types))
	for i, t := range types {
		changed[i] = string(t)
	}
	if first {
		var all []xdslog.Resource
		for _, t := range resources.Types {
			for _, r := range set.ByType[t].All() {
				all = append(all, xdslog.Resource{Type: string(t), Name: r.Name, Hash: r.Hash})
			}
		}
		rec.Emit(xdslog.Event{Event: xdslog.EventPublish, Node: node, Version: set.Version, Resources: all, Changed: changed})
		return
	}
	var updated, deleted []xdslog.Resource
	for _, e := range change.Edits {
		if e.New != nil {
			updated = append(updated, xdslog.Resource{Type: string(e.Type), Name: e.Name, Hash: e.New.Hash})
		} else {
			deleted = append(deleted, xdslog.Resource{Type: string(e.Type), Name: e.Name, Hash: e.Old.Hash})
		}
	}
	rec.Emit(xdslog.Event{Event: xdslog.EventPublish, Node: node, Version: set.Version, Incremental: true, Resources: updated, Deleted: deleted, Changed: changed})
}

// nameTable maps content hash -> resource name for the published set and, where it lacks
// the content, the set before it (a send of the old state may still be in flight): what
// Describe reads. It moves by each publish's change, so a publish costs O(what changed).
type nameTable struct {
	mu     sync.Mutex
	byHash map[string]string
	// retired are the hashes the last publish replaced or deleted: named one publish more.
	retired []string
}

// advance applies one publish's change.
func (n *nameTable) advance(c resources.Change) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byHash == nil {
		n.byHash = map[string]string{}
	}
	for _, h := range n.retired {
		delete(n.byHash, h)
	}
	n.retired = n.retired[:0]
	for _, e := range c.Edits {
		if e.New != nil {
			n.byHash[e.New.Hash] = e.Name
		}
		if e.Old != nil {
			n.retired = append(n.retired, e.Old.Hash)
		}
	}
}

// describe names and hashes a resource on the wire. The hash is computed from the bytes
// sent (the library's delta version is the same function), so what is recorded is what
// was sent; the name comes from the table, or from decoding when the content is unknown.
func (n *nameTable) describe(a *anypb.Any) (name, hash string) {
	hash = cachev3.HashResource(a.GetValue())
	n.mu.Lock()
	name, ok := n.byHash[hash]
	n.mu.Unlock()
	if ok {
		return name, hash
	}
	return resources.NameOnWire(a), hash
}

// Current returns the last published set (nil before the first publish).
func (p *Publisher) Current() *resources.Set {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current
}

// Versions returns the per-type version labels of the last publish: SotW version_info,
// delta system_version_info.
func (p *Publisher) Versions() map[resources.Type]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[resources.Type]string, len(p.versions))
	for k, v := range p.versions {
		out[k] = v
	}
	return out
}

// Describe returns the name and content hash of a resource on the wire; it is a
// DescribeFunc for the transports. The hash is computed from the bytes sent (the
// library's delta version is the same function), so what is recorded is what was sent;
// the name comes from the published sets, or from decoding when the content is unknown.
func (p *Publisher) Describe(a *anypb.Any) (name, hash string) { return p.names.describe(a) }
