package resources

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// NewSet makes a set from resources given one by one (a scenario's desired state) rather
// than built from a State. Every resource is validated (Validate) except those invalid
// names as "TYPE/name" (e.g. "RDS/quote-route"), which must fail validation: they are
// published on purpose, to observe a NACK. Set.Invalid lists their names.
// Unlike Build, the set need not be consistent: a scenario may route to a cluster the
// server does not have, or list a cluster whose endpoints it never publishes, because
// that is what it studies. Resources are hashed here when their Hash is empty.
func NewSet(version string, rs []Resource, invalid []string) (*Set, error) {
	if version == "" {
		return nil, fmt.Errorf("new set: empty version label")
	}
	set := &Set{Version: version, ByType: map[Type]List{}, id: setIDs.Add(1), lenient: true, names: &nameIndex{}}
	bad := map[string]bool{}
	for _, n := range invalid {
		bad[n] = true
	}
	seen := map[Type]map[string]bool{}
	byType := map[Type][]Resource{}
	for _, r := range rs {
		if _, ok := TypeOf(r.Type.URL()); !ok {
			return nil, fmt.Errorf("version %s: resource %q: unknown type %q", version, r.Name, r.Type)
		}
		if r.Resource == nil || r.Name == "" {
			return nil, fmt.Errorf("version %s: %s resource without a name or content", version, r.Type)
		}
		if seen[r.Type] == nil {
			seen[r.Type] = map[string]bool{}
		}
		if seen[r.Type][r.Name] {
			return nil, fmt.Errorf("version %s: %s %q is given twice", version, r.Type, r.Name)
		}
		seen[r.Type][r.Name] = true
		err := Validate(r.Resource)
		key := string(r.Type) + "/" + r.Name
		switch {
		case bad[key] && err == nil:
			return nil, fmt.Errorf("version %s: %s %q is marked invalid but validates", version, r.Type, r.Name)
		case !bad[key] && err != nil:
			return nil, fmt.Errorf("version %s: %s %q: %w", version, r.Type, r.Name, err)
		}
		if r.Hash == "" {
			h, err := Hash(r.Resource)
			if err != nil {
				return nil, fmt.Errorf("version %s: hash %s %q: %w", version, r.Type, r.Name, err)
			}
			r.Hash = h
		}
		byType[r.Type] = append(byType[r.Type], r)
	}
	for k := range bad {
		_, name, _ := strings.Cut(k, "/")
		set.Invalid = append(set.Invalid, name)
	}
	slices.Sort(set.Invalid)
	for t, rs := range byType {
		slices.SortFunc(rs, func(a, b Resource) int { return cmp.Compare(a.Name, b.Name) })
		set.ByType[t] = ListOf(rs...)
	}
	if err := checkVirtualHosts(version, set); err != nil {
		return nil, err
	}
	return set, nil
}
