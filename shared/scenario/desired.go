package scenario

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"

	"github.com/xds-workbench/lab/shared/certs"
	"github.com/xds-workbench/lab/shared/resources"
)

// Resource is one resource id of a scenario: the xDS resources it stands for. A short-form
// cluster with backends is two (the cluster and its assignment); every other form is one.
type Resource struct {
	ID string
	// Invalid marks a resource published on purpose although it fails validation, to
	// observe the NACK. Parse proves that it does fail.
	Invalid bool
	Items   []Item
}

// Item is one xDS resource of an id. Its content depends on the run (ports, the access
// log), so it is built against an Env.
type Item struct {
	Type  resources.Type
	Name  string
	build func(Env) (types.Resource, error)
}

// Build makes the item's resource for env.
func (it Item) Build(env Env) (types.Resource, error) { return it.build(env) }

// Env is what a scenario's resources take from the run.
type Env struct {
	// Backends maps a backend name to its port.
	Backends     map[string]int
	ListenerPort int
	// AccessLog is where the short-form listener writes Envoy's access log ("" for none).
	AccessLog string
	// Proxyless builds the short-form listeners for a proxyless gRPC client
	// (resources.ListenerSpec.Proxyless): an api_listener, same routes.
	Proxyless bool
	// CA issues the certificates of the scenario's secrets (a run's own; Parse uses one
	// of its own when nil). Its leaves are memoized, so a secret built twice is the same.
	CA *certs.CA
}

// Key names one xDS resource.
type Key struct {
	Type resources.Type
	Name string
}

func (k Key) String() string { return string(k.Type) + "/" + k.Name }

// Desired is a scenario's desired state as a run moves through its steps: which id
// provides each xDS resource now, and the publish counter that labels versions.
type Desired struct {
	sc    *Scenario
	by    map[Key]owner
	count int
	// base is the last label given without "{prev}": what "{prev}" stands for.
	base string
}

type owner struct {
	item    Item
	invalid bool
}

// NewDesired starts from nothing.
func NewDesired(sc *Scenario) *Desired { return &Desired{sc: sc, by: map[Key]owner{}} }

// Clone copies d, so a step can try a change without touching the run's state.
func (d *Desired) Clone() *Desired {
	c := &Desired{sc: d.sc, by: make(map[Key]owner, len(d.by)), count: d.count, base: d.base}
	for k, v := range d.by {
		c.by[k] = v
	}
	return c
}

// Apply applies a change and returns the label to publish it under: c.Version, in which
// "{prev}" stands for the last label given without "{prev}" (so after "4", "{prev}.1"
// and then "{prev}.2" are "4.1" and "4.2"), or
// else the count of publishes without a label of their own ("1", "2", ...). Upserts
// replace resources of the same type and name; a delete removes the names its id
// defines. Parse has checked every id.
func (d *Desired) Apply(c Change) (string, error) {
	for _, id := range c.Delete {
		r, ok := d.sc.Resources[id]
		if !ok {
			return "", fmt.Errorf("delete: no resource %q", id)
		}
		for _, it := range r.Items {
			delete(d.by, Key{it.Type, it.Name})
		}
	}
	for _, id := range c.Upsert {
		r, ok := d.sc.Resources[id]
		if !ok {
			return "", fmt.Errorf("upsert: no resource %q", id)
		}
		for _, it := range r.Items {
			d.by[Key{it.Type, it.Name}] = owner{item: it, invalid: r.Invalid}
		}
	}
	switch {
	case strings.Contains(c.Version, "{prev}"):
		return strings.ReplaceAll(c.Version, "{prev}", d.base), nil
	case c.Version != "":
		d.base = c.Version
		return c.Version, nil
	}
	d.count++
	d.base = strconv.Itoa(d.count)
	return d.base, nil
}

// Keys lists the resources in force, sorted.
func (d *Desired) Keys() []Key {
	out := make([]Key, 0, len(d.by))
	for k := range d.by {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Set builds the resources in force for env, validated (except the deliberately invalid
// ones) and hashed, labelled version.
func (d *Desired) Set(version string, env Env) (*resources.Set, error) {
	var (
		rs      []resources.Resource
		invalid []string
	)
	for _, k := range d.Keys() {
		o := d.by[k]
		m, err := o.item.build(env)
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", k, err)
		}
		rs = append(rs, resources.Resource{Type: k.Type, Name: k.Name, Resource: m})
		if o.invalid {
			invalid = append(invalid, k.String())
		}
	}
	return resources.NewSet(version, rs, invalid)
}

// CheckProxyless refuses a scenario whose listeners a proxyless gRPC client cannot use:
// each listener, built as a grpc run builds it (Env.Proxyless: a short-form listener is
// an api_listener), must pass resources.CheckProxyless. A listener written in Envoy's v3
// form as a socket listener does not, and would leave the client waiting for a route it
// never asks for. Resources marked invalid are published to be rejected and are not
// checked.
func (sc *Scenario) CheckProxyless() error {
	env := checkEnv(sc.Backends)
	env.Proxyless, env.AccessLog = true, "" // as the runner builds for grpc: no access log
	for _, id := range slices.Sorted(maps.Keys(sc.Resources)) {
		r := sc.Resources[id]
		for _, it := range r.Items {
			if it.Type != resources.LDS || r.Invalid {
				continue
			}
			m, err := it.Build(env)
			if err != nil {
				return fmt.Errorf("resource %q: %w", id, err)
			}
			if l, ok := m.(*listener.Listener); ok {
				if err := resources.CheckProxyless(l); err != nil {
					return fmt.Errorf("resource %q: %w", id, err)
				}
			}
		}
	}
	return nil
}
