package resources

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
)

// Edit is one resource that differs between two sets: Old is nil when it was added, New
// is nil when it was deleted.
type Edit struct {
	Type     Type
	Name     string
	Old, New *Resource
}

// Change is what differs from one set to the next, in Types order and then by name.
type Change struct {
	Edits []Edit
}

// Empty reports whether nothing differs.
func (c Change) Empty() bool { return len(c.Edits) == 0 }

// Types lists the types with at least one edit, in Types order.
func (c Change) Types() []Type {
	var out []Type
	for _, e := range c.Edits {
		if len(out) == 0 || out[len(out)-1] != e.Type {
			out = append(out, e.Type)
		}
	}
	return out
}

// setIDs numbers sets, so that a set can name the set it was rebuilt from without holding
// it (a pointer would keep every earlier state alive).
var setIDs atomic.Uint64

// Diff returns what differs from prev to next (every resource of next as added when prev
// is nil). When next was rebuilt from prev it is the change Rebuild recorded, at no cost;
// otherwise both sets are compared by content hash, O(resources).
func Diff(prev, next *Set) Change {
	if next.RebuiltFrom(prev) {
		return *next.change
	}
	var c Change
	for _, t := range Types {
		var old map[string]*Resource
		if prev != nil {
			pl := prev.ByType[t]
			old = make(map[string]*Resource, pl.Len())
			for i := range pl.Len() {
				old[pl.ref(i).Name] = pl.ref(i)
			}
		}
		var edits []Edit
		nl := next.ByType[t]
		for i := range nl.Len() {
			r := nl.ref(i)
			o, ok := old[r.Name]
			if ok {
				delete(old, r.Name)
				if o.Hash == r.Hash {
					continue
				}
			}
			edits = append(edits, Edit{Type: t, Name: r.Name, Old: o, New: r})
		}
		for name, o := range old {
			edits = append(edits, Edit{Type: t, Name: name, Old: o})
		}
		slices.SortFunc(edits, func(a, b Edit) int { return cmp.Compare(a.Name, b.Name) })
		c.Edits = append(c.Edits, edits...)
	}
	return c
}

// RebuiltFrom reports whether s was made by Rebuild from prev (so Diff(prev, s) is free and
// s is consistent by construction).
func (s *Set) RebuiltFrom(prev *Set) bool {
	return prev != nil && s.change != nil && s.parent == prev.id
}

// Rebuild makes the set of next from prev, building, validating and hashing only the
// resources next changes: the cost is O(what changed) plus, per changed type, one copy
// of the chunks it touches and of the list's chunk pointers (List), not O(N). Shape changes that
// touch every resource anyway (the teaching state to the scaled one, removing the
// inventory, moving the default endpoint port) build the whole state. The result equals
// Build(next) resource for resource, and Diff(prev, result) is the change at no cost.
func Rebuild(prev *Set, next State) (*Set, error) {
	if prev == nil {
		return Build(next)
	}
	next, err := checkState(next)
	if err != nil {
		return nil, err
	}
	was := prev.state
	if prev.lenient || (was.Clusters > 0) != (next.Clusters > 0) || was.InventoryRemoved != next.InventoryRemoved || was.InventoryPort != next.InventoryPort || was.OnDemand != next.OnDemand || was.Proxyless != next.Proxyless || was.UnlistedEmpty != next.UnlistedEmpty {
		set, err := Build(next)
		if err != nil {
			return nil, err
		}
		c := Diff(prev, set)
		set.parent, set.change = prev.id, &c
		return set, nil
	}

	set := &Set{
		Version: next.Version,
		ByType:  maps.Clone(prev.ByType),
		state:   next,
		id:      setIDs.Add(1),
		parent:  prev.id,
		names:   &nameIndex{},
	}
	if next.InvalidRoute {
		set.Invalid = []string{RouteName}
	}
	var c Change
	if was.ListenerPort != next.ListenerPort || was.AccessLogPath != next.AccessLogPath || was.ServerName != next.ServerName {
		l, err := buildListener(next)
		if err != nil {
			return nil, fmt.Errorf("build version %s: %w", next.Version, err)
		}
		if err := set.replaceOne(&c, LDS, ListenerName, l, true); err != nil {
			return nil, err
		}
	}
	if next.OnDemand.VirtualHosts {
		// The route configuration only names VHDS; the routes are the virtual hosts.
		if err := set.editVirtualHosts(&c, was, next); err != nil {
			return nil, err
		}
	} else if was.InvalidRoute != next.InvalidRoute || was.Clusters != next.Clusters || !maps.Equal(was.RouteTargets, next.RouteTargets) {
		rc := buildRoute(next)
		if next.InvalidRoute && validate(rc) == nil {
			return nil, fmt.Errorf("build version %s: the invalid route unexpectedly validates", next.Version)
		}
		if err := set.replaceOne(&c, RDS, RouteName, rc, !next.InvalidRoute); err != nil {
			return nil, err
		}
	}
	if !next.InventoryRemoved {
		if err := set.editInventory(&c, was, next); err != nil {
			return nil, err
		}
	}
	set.change = &c
	return set, nil
}

// editInventory rebuilds the clusters and endpoints next adds, removes or re-points. The
// scaled state's clusters are in index order (cluster i at position i), so a moved
// endpoint is patched in place, added ones go at the end and removed ones come off the
// end, exactly where Build puts them.
func (s *Set) editInventory(c *Change, was, next State) error {
	// Which endpoint ports may differ: an override set or cleared in either state (the
	// default port is equal here, else the whole state was built).
	var moved []int
	for i := range was.EndpointPorts {
		if i < min(was.Clusters, next.Clusters) && endpointPort(was, i) != endpointPort(next, i) {
			moved = append(moved, i)
		}
	}
	for i := range next.EndpointPorts {
		if _, seen := was.EndpointPorts[i]; !seen && i < was.Clusters && endpointPort(was, i) != endpointPort(next, i) {
			moved = append(moved, i)
		}
	}
	slices.Sort(moved)
	if next.Clusters <= 0 {
		// The teaching state: one cluster, whose endpoint port is the inventory port
		// (equal here).
		return nil
	}
	// Removed clusters come off the end, in order.
	if next.Clusters < was.Clusters {
		for _, t := range []Type{CDS, EDS} {
			rs := s.ByType[t]
			for i := next.Clusters; i < was.Clusters; i++ {
				c.Edits = append(c.Edits, Edit{Type: t, Name: ScaledClusterName(i), Old: ptr(rs.At(i))})
			}
			s.ByType[t] = rs.truncated(next.Clusters)
		}
	}
	var cds, eds []Edit
	var repl []indexed
	for _, i := range moved {
		r, err := s.built(EDS, ScaledClusterName(i), buildEndpoints(ScaledClusterName(i), endpointPort(next, i)), true)
		if err != nil {
			return err
		}
		old := s.ByType[EDS].At(i)
		if old.Hash == r.Hash {
			continue
		}
		repl = append(repl, indexed{i, r})
		eds = append(eds, Edit{Type: EDS, Name: r.Name, Old: ptr(old), New: ptr(r)})
	}
	s.ByType[EDS] = s.ByType[EDS].with(repl...)
	// Added clusters go on the end, in order.
	if next.Clusters > was.Clusters {
		var addCDS, addEDS []Resource
		for i := was.Clusters; i < next.Clusters; i++ {
			name := ScaledClusterName(i)
			cl, err := s.built(CDS, name, buildCluster(name), true)
			if err != nil {
				return err
			}
			ep, err := s.built(EDS, name, buildEndpoints(name, endpointPort(next, i)), true)
			if err != nil {
				return err
			}
			addCDS, addEDS = append(addCDS, cl), append(addEDS, ep)
			cds = append(cds, Edit{Type: CDS, Name: name, New: ptr(cl)})
			eds = append(eds, Edit{Type: EDS, Name: name, New: ptr(ep)})
		}
		s.ByType[CDS] = s.ByType[CDS].appended(addCDS...)
		s.ByType[EDS] = s.ByType[EDS].appended(addEDS...)
	}
	c.Edits = append(c.Edits, cds...)
	c.Edits = append(c.Edits, eds...)
	sortEdits(c)
	return nil
}

// editVirtualHosts rebuilds the virtual hosts next adds, removes or re-points (the VHDS
// shape of the scaled state: virtual host i at position i, as Build puts them), so that
// adding a service costs one virtual host instead of the whole route configuration.
func (s *Set) editVirtualHosts(c *Change, was, next State) error {
	if next.Clusters <= 0 {
		return nil // the teaching state's one virtual host never changes
	}
	rs := s.ByType[VHDS]
	if next.Clusters < was.Clusters {
		for i := next.Clusters; i < was.Clusters; i++ {
			c.Edits = append(c.Edits, Edit{Type: VHDS, Name: rs.At(i).Name, Old: ptr(rs.At(i))})
		}
		rs = rs.truncated(next.Clusters)
	}
	var changed []int
	for i := range min(was.Clusters, next.Clusters) {
		if routeTarget(was, i) != routeTarget(next, i) {
			changed = append(changed, i)
		}
	}
	repl := make([]indexed, 0, len(changed))
	for _, i := range changed {
		vh := buildVirtualHost(next, i)
		r, err := s.built(VHDS, vh.GetName(), vh, true)
		if err != nil {
			return err
		}
		c.Edits = append(c.Edits, Edit{Type: VHDS, Name: r.Name, Old: ptr(rs.At(i)), New: ptr(r)})
		repl = append(repl, indexed{i, r})
	}
	rs = rs.with(repl...)
	var added []Resource
	for i := was.Clusters; i < next.Clusters; i++ {
		vh := buildVirtualHost(next, i)
		r, err := s.built(VHDS, vh.GetName(), vh, true)
		if err != nil {
			return err
		}
		added = append(added, r)
		c.Edits = append(c.Edits, Edit{Type: VHDS, Name: r.Name, New: ptr(r)})
	}
	s.ByType[VHDS] = rs.appended(added...)
	sortEdits(c)
	return nil
}

// routeTarget is the cluster index route i of the scaled state s sends to.
func routeTarget(s State, i int) int {
	if j, ok := s.RouteTargets[i]; ok {
		return j
	}
	return i
}

// replaceOne swaps in the one resource of a single-resource type (the listener, the route
// configuration) when its content changed.
func (s *Set) replaceOne(c *Change, t Type, name string, r types.Resource, mustValidate bool) error {
	res, err := s.built(t, name, r, mustValidate)
	if err != nil {
		return err
	}
	old := s.ByType[t]
	if old.Len() == 1 && old.At(0).Hash == res.Hash {
		return nil
	}
	var o *Resource
	if old.Len() == 1 {
		o = ptr(old.At(0))
	}
	s.ByType[t] = ListOf(res)
	c.Edits = append(c.Edits, Edit{Type: t, Name: name, Old: o, New: ptr(res)})
	sortEdits(c)
	return nil
}

// built validates (when asked) and hashes one freshly built resource.
func (s *Set) built(t Type, name string, r types.Resource, mustValidate bool) (Resource, error) {
	return builtResource(s.Version, t, name, r, mustValidate)
}

// sortEdits keeps a change in Types order, then by name.
func sortEdits(c *Change) {
	rank := func(t Type) int { return slices.Index(Types, t) }
	slices.SortStableFunc(c.Edits, func(a, b Edit) int {
		return cmp.Or(cmp.Compare(rank(a.Type), rank(b.Type)), cmp.Compare(a.Name, b.Name))
	})
}

func ptr(r Resource) *Resource { return &r }

// noEndpoint is endpointPort's answer for a cluster that has no endpoint
// (State.UnlistedEmpty); no valid port is 0.
const noEndpoint = 0

// endpointPort is the endpoint port of scaled cluster i in s, or noEndpoint.
func endpointPort(s State, i int) int {
	if p, ok := s.EndpointPorts[i]; ok {
		return p
	}
	if s.UnlistedEmpty && s.Clusters > 0 {
		return noEndpoint
	}
	return s.InventoryPort
}
