package indexcache

// respond compares r's subscription with the cache on the candidate names and, when the
// LinearCache would answer (computeResponse), sends the answer and closes r's watch. It
// reports whether it sent.
func (c *Cache) respond(t *typeState, r *reg, candidates []string, replyEvenIfEmpty bool) bool {
	changed, removed := c.compare(t, r, candidates)
	if c.dropRemovals {
		removed = nil
	}
	if len(changed) == 0 && len(removed) == 0 && !replyEvenIfEmpty {
		return false
	}
	toReturn := changed
	if !r.delta && t.fullState {
		// SotW LDS and CDS: every subscribed resource, changed or not (the protocol's O(N)).
		toReturn = t.fullStateNames(r.sub)
	} else if !r.delta && !replyEvenIfEmpty && len(changed) == 0 {
		// SotW RDS and EDS cannot say "removed": nothing to send.
		return false
	}
	d := &diff{cache: c, base: r.sub.ReturnedResources(), removed: removed}
	entries := make([]*entry, len(toReturn))
	d.updated = make(map[string]string, len(toReturn))
	for i, n := range toReturn {
		e := t.resources[n]
		entries[i] = e
		d.updated[n] = e.version(r.delta)
	}
	version := t.versionString(c.prefix)
	if r.delta {
		r.dch <- &deltaResponse{req: r.dreq, version: version, entries: entries, removed: removed, diff: d}
		r.returned = mapKey(d.base)
		r.open = false
		t.detached[r] = t.epoch
	} else {
		r.ch <- &sotwResponse{req: r.req, version: version, entries: entries, diff: d}
		r.returned = mapKey(d.base)
		r.open = false
		t.detached[r] = t.epoch
		// The SotW ADS server drops a response whose type's next request came first
		// (processAllExcept), leaving the client's map as it was: compare these again.
		for _, n := range changed {
			r.dirty[n] = struct{}{}
		}
		for _, n := range removed {
			r.dirty[n] = struct{}{}
		}
	}
	return true
}

// compare is the LinearCache's computeResourceChange restricted to names: which the
// client lacks or has at another version (changed), and which it has but should not
// (removed: gone from the cache, or no longer subscribed to when not wildcard).
func (c *Cache) compare(t *typeState, r *reg, names []string) (changed, removed []string) {
	c.returnedMu.Lock()
	defer c.returnedMu.Unlock()
	known, subscribed, wildcard := r.sub.ReturnedResources(), r.sub.SubscribedResources(), r.sub.IsWildcard()
	seen := make(map[string]struct{}, len(names))
	for _, n := range names {
		if _, dup := seen[n]; dup || n == "*" {
			continue
		}
		seen[n] = struct{}{}
		kv, isKnown := known[n]
		_, isSubscribed := subscribed[n]
		e, exists := t.resources[n]
		switch {
		case !wildcard && !isSubscribed:
			if isKnown {
				removed = append(removed, n)
			}
		case !exists:
			if isKnown {
				removed = append(removed, n)
			}
		case !isKnown || kv != e.version(r.delta):
			changed = append(changed, n)
		}
	}
	return changed, removed
}

// fullStateNames is what a SotW full-state response carries: every resource when
// wildcard, else every subscribed one the cache has.
func (t *typeState) fullStateNames(sub interface {
	IsWildcard() bool
	SubscribedResources() map[string]struct{}
}) []string {
	if sub.IsWildcard() {
		out := make([]string, 0, len(t.resources))
		for n := range t.resources {
			out = append(out, n)
		}
		return out
	}
	out := make([]string, 0, len(sub.SubscribedResources()))
	for n := range sub.SubscribedResources() {
		if _, ok := t.resources[n]; ok {
			out = append(out, n)
		}
	}
	return out
}
