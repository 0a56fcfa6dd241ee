// Package frontend defines what an ADS front end is to the rest of the workbench (the
// FrontEnd interface) and the part both front ends share: turning a validated resource
// set into a library snapshot with the right per-type versions, and recording the
// publish. The SotW and delta packages add only their transport and its recording.
package frontend

import (
	"context"
	"fmt"
	"sync"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// FrontEnd is an ADS server in one protocol. Everything above it is mode-blind.
type FrontEnd interface {
	// Mode is xdslog.ModeSotW or xdslog.ModeDelta.
	Mode() string
	// Register adds the ADS service to s. The method of the other protocol is refused
	// with codes.Unimplemented.
	Register(s *grpc.Server)
	// Publish makes set the desired state served to the node.
	Publish(ctx context.Context, set *resources.Set) error
	// Current returns the last published set (nil before the first publish).
	Current() *resources.Set
	// Versions returns the per-type version labels of the last publish.
	Versions() map[resources.Type]string
}

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

// Publisher owns the snapshot cache's state for one node: it assigns type versions,
// checks consistency, records the publish and sets the snapshot.
type Publisher struct {
	Cache    cachev3.SnapshotCache
	NodeID   string
	Recorder *xdslog.Recorder
	Strategy VersionStrategy

	mu       sync.Mutex
	current  *resources.Set
	versions map[resources.Type]string
	names    map[string]string // content hash -> resource name, current and previous set
}

// Publish validates set against the previous one, sets the snapshot and records it.
func (p *Publisher) Publish(ctx context.Context, set *resources.Set) error {
	if set == nil {
		return fmt.Errorf("publish: nil resource set")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := set.ChangedTypes(p.current)
	versions := resources.UniformVersions(set.Version)
	if p.Strategy == PerType && p.current != nil {
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
	var published []xdslog.Resource
	names := make(map[string]string)
	for _, t := range resources.Types {
		for _, r := range set.ByType[t] {
			published = append(published, xdslog.Resource{Type: string(t), Name: r.Name, Hash: r.Hash})
			names[r.Hash] = r.Name
		}
	}
	changedNames := make([]string, len(changed))
	for i, t := range changed {
		changedNames[i] = string(t)
	}
	// Record before setting: SetSnapshot may trigger sends at once, and the log must show
	// the publish first.
	p.Recorder.Publish(set.Version, published, changedNames)
	if err := p.Cache.SetSnapshot(ctx, p.NodeID, snap); err != nil {
		return fmt.Errorf("publish version %s: set snapshot: %w", set.Version, err)
	}
	if p.current != nil {
		for _, t := range resources.Types {
			for _, r := range p.current.ByType[t] {
				if _, ok := names[r.Hash]; !ok {
					names[r.Hash] = r.Name
				}
			}
		}
	}
	p.current, p.versions, p.names = set, versions, names
	return nil
}

// Current returns the last published set.
func (p *Publisher) Current() *resources.Set {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current
}

// Versions returns the type versions of the last publish.
func (p *Publisher) Versions() map[resources.Type]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[resources.Type]string, len(p.versions))
	for k, v := range p.versions {
		out[k] = v
	}
	return out
}

// Describe returns the name and content hash of a resource on the wire. The hash is
// computed from the bytes sent (the library's delta version is the same function), so
// what is recorded is what was sent; the name comes from the published sets, or from
// decoding when the content is unknown.
func (p *Publisher) Describe(a *anypb.Any) (name, hash string) {
	hash = cachev3.HashResource(a.GetValue())
	p.mu.Lock()
	name, ok := p.names[hash]
	p.mu.Unlock()
	if ok {
		return name, hash
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return "?undecodable", hash
	}
	return cachev3.GetResourceName(m), hash
}

// CheckType maps a request's type URL to its short name. Any other type is refused: the
// stream ends with InvalidArgument and the refusal is recorded.
func CheckType(rec *xdslog.Recorder, stream int64, url string) (resources.Type, error) {
	t, ok := resources.TypeOf(url)
	if !ok {
		msg := fmt.Sprintf("unsupported type URL %q: this workbench serves LDS, RDS, CDS and EDS", url)
		rec.Emit(xdslog.Event{Event: xdslog.EventRefused, Stream: stream, Error: msg})
		return "", status.Error(codes.InvalidArgument, msg)
	}
	return t, nil
}

// RefuseProtocol records and returns the refusal of a stream in the other protocol.
func RefuseProtocol(rec *xdslog.Recorder, what, msg string) error {
	rec.Emit(xdslog.Event{Event: xdslog.EventRefused, Error: what + " refused: " + msg})
	return status.Error(codes.Unimplemented, msg)
}

// DiscardLogger drops the library's logs; the workbench's evidence is xds.log.
type DiscardLogger struct{}

func (DiscardLogger) Debugf(string, ...any) {}
func (DiscardLogger) Infof(string, ...any)  {}
func (DiscardLogger) Warnf(string, ...any)  {}
func (DiscardLogger) Errorf(string, ...any) {}
