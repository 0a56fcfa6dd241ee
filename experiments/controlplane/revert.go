package controlplane

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// The revert NACK policy (sotw.Revert) answers a NACK by republishing the last content
// the client accepted for the rejected type (Cilium's approach, cilium#43887). The
// transport holds the watch, so nothing is re-sent meanwhile, and calls onNack; the
// control plane, which owns the state, builds the set and publishes it.

// RevertSuffix ends the label of a reverted set: <current label>-reverted.
const RevertSuffix = "-reverted"

// RevertHistory is how many sets published for one node a revert searches for the content
// the client accepted (by type, name and content hash), newest first. Sets rebuilt from
// one another (resources.Rebuild) share the resources they did not change, so this holds
// up to RevertHistory copies of what changed, not RevertHistory states (a full rebuild, a
// change of the state's shape, is a state of its own). Content accepted before the oldest
// set kept cannot be found: the revert then falls back to hold, and says so.
const RevertHistory = 8

// revertingPublisher is one node's publisher under the revert policy. It keeps the last
// RevertHistory sets published through it, and serializes publishes with reverts, so that
// a revert never replaces a state published after the NACK it answers.
type revertingPublisher struct {
	publish.StatePublisher

	mu      sync.Mutex
	history []*resources.Set // oldest first
}

// Publish implements publish.StatePublisher.
func (p *revertingPublisher) Publish(ctx context.Context, set *resources.Set) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.publishLocked(ctx, set)
}

func (p *revertingPublisher) publishLocked(ctx context.Context, set *resources.Set) error {
	if err := p.StatePublisher.Publish(ctx, set); err != nil {
		return err
	}
	if len(p.history) == RevertHistory {
		// Shift rather than reslice, so that the oldest set is released.
		copy(p.history, p.history[1:])
		p.history = p.history[:RevertHistory-1]
	}
	p.history = append(p.history, set)
	return nil
}

// findLocked returns the resource of type t named name with content hash, from the newest
// set kept that has it.
func (p *revertingPublisher) findLocked(t resources.Type, name, hash string) (resources.Resource, bool) {
	for i := len(p.history) - 1; i >= 0; i-- {
		for _, r := range p.history[i].ByType[t].All() {
			if r.Name == name && r.Hash == hash {
				return r, true
			}
		}
	}
	return resources.Resource{}, false
}

// revertedLocked is cur with type t's resources replaced by accepted (name -> what the
// client accepted), labelled <cur>-reverted.
func (p *revertingPublisher) revertedLocked(cur *resources.Set, t resources.Type, accepted map[string]xdslog.Accepted) (*resources.Set, error) {
	var rs []resources.Resource
	for _, typ := range resources.Types {
		if typ != t {
			rs = append(rs, cur.ByType[typ].Resources()...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(accepted)) {
		a := accepted[name]
		r, ok := p.findLocked(t, name, a.Hash)
		if !ok {
			return nil, fmt.Errorf("the accepted %s %q (hash %.12s) is not among the last %d sets published for this node", t, name, a.Hash, RevertHistory)
		}
		rs = append(rs, r)
	}
	// The deliberately invalid resources of the other types stay so (NewSet wants the
	// names it is told are invalid to fail validation); the reverted type's accepted
	// content passed the client's validation and must pass ours.
	var invalid []string
	for _, r := range rs {
		if slices.Contains(cur.Invalid, r.Name) && resources.Validate(r.Resource) != nil {
			invalid = append(invalid, string(r.Type)+"/"+r.Name)
		}
	}
	set, err := resources.NewSet(cur.Version+RevertSuffix, rs, invalid)
	if err != nil {
		return nil, fmt.Errorf("build the reverted set: %w", err)
	}
	return set, nil
}

// onNack is the transport's OnNack (on a goroutine of its own): it reverts unless the
// control plane is stopping, and Stop waits for it.
func (c *ControlPlane) onNack(n sotw.Nack) {
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return
	}
	c.reverts.Add(1)
	c.mu.Unlock()
	defer c.reverts.Done()
	c.revert(n)
}

// revert answers one NACK: it republishes the state served with n.Type's resources
// replaced by the ones the client on n.Stream last accepted (the recorder's account),
// labelled <current>-reverted, and records the decision as a revert event first. When it
// cannot, the event says why and the NACK holds (the transport parked the watch).
func (c *ControlPlane) revert(n sotw.Nack) {
	ev := xdslog.Event{Event: xdslog.EventRevert, Stream: n.Stream, Type: string(n.Type), Node: n.Node, SentVersion: n.SentVersion}
	skip := func(format string, args ...any) {
		ev.Error = fmt.Sprintf(format, args...)
		c.rec.Emit(ev)
	}
	p := c.revertingFor(n.Node)
	if p == nil {
		skip("not reverted: node %q has no state of its own; the NACK holds", n.Node)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.Current()
	if cur == nil {
		skip("not reverted: nothing is published; the NACK holds")
		return
	}
	if v := p.Versions()[n.Type]; v != n.SentVersion {
		// A publish after the rejected send: the held watch is answered with it.
		skip("not reverted: %s is at version %s since the rejected %s; that publish answers the NACK", n.Type, v, n.SentVersion)
		return
	}
	if strings.HasSuffix(cur.Version, RevertSuffix) {
		skip("not reverted: version %s is a revert already, reverting again gains nothing; the NACK holds", cur.Version)
		return
	}
	accepted, open := c.acceptedOn(n.Stream, n.Type)
	switch {
	case !open:
		skip("not reverted: stream %d is closed; the NACK holds", n.Stream)
		return
	case len(accepted) == 0:
		skip("not reverted: the client on stream %d never accepted any %s, there is nothing to revert to; the NACK holds", n.Stream, n.Type)
		return
	}
	set, err := p.revertedLocked(cur, n.Type, accepted)
	if err != nil {
		skip("not reverted: %v; the NACK holds", err)
		return
	}
	ev.Version = set.Version
	c.rec.Emit(ev)
	if err := p.publishLocked(c.revertCtx, set); err != nil {
		ev.Version = ""
		skip("not reverted: publish %s: %v; the NACK holds", set.Version, err)
	}
}

// revertingFor is the publisher of the state node is served (nil: none). With one state,
// every node is served it.
func (c *ControlPlane) revertingFor(node string) *revertingPublisher {
	p := c.pub
	if c.perNode {
		p = c.pubs[node]
	}
	rp, _ := p.(*revertingPublisher)
	return rp
}

// acceptedOn is what the client on stream accepted of type t, per name, as the recorder
// tells it; open is false when the stream is not open. It costs one copy of every open
// stream's state (Recorder.Status), paid only on a NACK under the revert policy.
func (c *ControlPlane) acceptedOn(stream int64, t resources.Type) (accepted map[string]xdslog.Accepted, open bool) {
	for _, st := range c.rec.Status() {
		if st.Stream == stream {
			return st.Accepted[string(t)], true
		}
	}
	return nil, false
}
