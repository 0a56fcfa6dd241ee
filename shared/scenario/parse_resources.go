package scenario

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/xds-workbench/lab/shared/resources"
)

// Resource forms: the full v3 forms by type, and the short forms.
var fullForms = map[string]resources.Type{"lds": resources.LDS, "rds": resources.RDS, "cds": resources.CDS, "eds": resources.EDS, "vhds": resources.VHDS, "sds": resources.SDS}

func (p *parser) resource(id string, keyNode, n *yaml.Node) (*Resource, error) {
	if !safeName.MatchString(id) {
		return nil, p.errf(keyNode, "resource id %q: use lower-case letters, digits, '.', '-' and '_'", id)
	}
	what := fmt.Sprintf("resource %q", id)
	f, err := p.fields(n, what)
	if err != nil {
		return nil, err
	}
	r := &Resource{ID: id}
	inv, err := f.boolean("invalid")
	if err != nil {
		return nil, err
	}
	r.Invalid = inv != nil && *inv
	var forms []string
	for _, k := range []string{"listener", "route", "vhost", "cluster", "endpoints", "secret", "lds", "rds", "cds", "eds", "vhds", "sds"} {
		if f.has(k) {
			forms = append(forms, k)
		}
	}
	if len(forms) != 1 {
		for k := range f.keys {
			f.used[k] = k == "invalid"
		}
		if err := f.done(); err != nil && len(forms) == 0 {
			return nil, err
		}
		return nil, p.errf(n, "%s needs exactly one of listener, route, vhost, cluster, endpoints, secret (short forms) or lds, rds, cds, eds, vhds, sds (Envoy's v3 form); got %d", what, len(forms))
	}
	form := forms[0]
	body := f.get(form)
	if t, ok := fullForms[form]; ok {
		it, err := p.fullForm(what, t, body)
		if err != nil {
			return nil, err
		}
		r.Items = []Item{it}
	} else if r.Items, err = p.shortForm(id, what, form, body); err != nil {
		return nil, err
	}
	if err := f.done(); err != nil {
		return nil, err
	}
	// Prove the content now, against placeholder ports: a resource that fails
	// validation is refused unless it is marked invalid, and one marked invalid must fail.
	env := checkEnv(p.sc.Backends)
	for _, it := range r.Items {
		m, err := it.build(env)
		if err != nil {
			return nil, p.errf(body, "%s: %v", what, err)
		}
		verr := resources.Validate(m)
		switch {
		case verr != nil && !r.Invalid:
			return nil, p.errf(body, "%s: %s %q fails validation: %v (mark it invalid: true to publish it on purpose)", what, it.Type, it.Name, verr)
		case verr == nil && r.Invalid:
			return nil, p.errf(body, "%s is marked invalid but %s %q validates", what, it.Type, it.Name)
		}
	}
	return r, nil
}

// checkEnv is the run environment Parse validates against: every backend on a distinct
// placeholder port.
func checkEnv(backends []string) Env {
	env := Env{Backends: map[string]int{}, ListenerPort: 10000, AccessLog: "/dev/null"}
	for i, b := range backends {
		env.Backends[b] = 10001 + i
	}
	return env
}

var placeholder = regexp.MustCompile(`\$\{([a-z_]+(?:\.[a-z0-9._-]+)?)\}`)

// fullForm reads a resource in Envoy's v3 form (YAML or JSON; the shape of a config dump
// entry, an "@type" key allowed) into the go-control-plane type with protojson.
// Placeholders ${backend.NAME.port}, ${listener.port} and ${access_log} take the run's
// values.
func (p *parser) fullForm(what string, t resources.Type, n *yaml.Node) (Item, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return Item{}, p.errf(n, "%s: %v", what, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Item{}, p.errf(n, "%s: the %s resource must be a mapping", what, t)
	}
	if at, ok := m["@type"].(string); ok {
		if at != t.URL() {
			return Item{}, p.errf(n, "%s: \"@type\" is %s, but the resource is under %s (want %s)", what, at, strings.ToLower(string(t)), t.URL())
		}
		delete(m, "@type")
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return Item{}, p.errf(n, "%s: %v", what, err)
	}
	for _, ph := range placeholder.FindAllStringSubmatch(string(raw), -1) {
		if err := p.checkPlaceholder(ph[1]); err != nil {
			return Item{}, p.errf(n, "%s: %v", what, err)
		}
	}
	build := func(env Env) (types.Resource, error) {
		text := placeholder.ReplaceAllStringFunc(string(raw), func(s string) string {
			return substitute(s[2:len(s)-1], env)
		})
		msg := newMessage(t)
		if err := (protojson.UnmarshalOptions{}).Unmarshal([]byte(text), msg); err != nil {
			return nil, fmt.Errorf("not a valid %s resource: %s", t, protoErr(err))
		}
		return msg, nil
	}
	msg, err := build(checkEnv(p.sc.Backends))
	if err != nil {
		return Item{}, p.errf(n, "%s: %v", what, err)
	}
	name := resourceName(msg)
	if name == "" {
		return Item{}, p.errf(n, "%s: the %s resource has no name", what, t)
	}
	return Item{Type: t, Name: name, build: build}, nil
}

// protoPos is protojson's position in the JSON it was given, which is not the file's.
var protoPos = regexp.MustCompile(`\(line \d+:\d+\): `)

func protoErr(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ") // protojson pads with non-breaking spaces
	s = strings.TrimPrefix(s, "proto: ")
	return protoPos.ReplaceAllString(s, "")
}

func (p *parser) checkPlaceholder(ph string) error {
	switch {
	case ph == "listener.port", ph == "access_log":
		return nil
	case strings.HasPrefix(ph, "backend.") && strings.HasSuffix(ph, ".port"):
		b := strings.TrimSuffix(strings.TrimPrefix(ph, "backend."), ".port")
		if !slices.Contains(p.sc.Backends, b) {
			return fmt.Errorf("${%s}: no backend %q (backends: %s)", ph, b, strings.Join(p.sc.Backends, ", "))
		}
		return nil
	}
	return fmt.Errorf("unknown placeholder ${%s} (known: ${backend.NAME.port}, ${listener.port}, ${access_log})", ph)
}

func substitute(ph string, env Env) string {
	switch {
	case ph == "listener.port":
		return strconv.Itoa(env.ListenerPort)
	case ph == "access_log":
		return env.AccessLog
	}
	b := strings.TrimSuffix(strings.TrimPrefix(ph, "backend."), ".port")
	return strconv.Itoa(env.Backends[b])
}

func newMessage(t resources.Type) proto.Message {
	switch t {
	case resources.LDS:
		return &listener.Listener{}
	case resources.RDS:
		return &route.RouteConfiguration{}
	case resources.CDS:
		return &cluster.Cluster{}
	case resources.VHDS:
		return &route.VirtualHost{}
	case resources.SDS:
		return &tlsv3.Secret{}
	}
	return &endpoint.ClusterLoadAssignment{}
}

func resourceName(m proto.Message) string {
	switch r := m.(type) {
	case *endpoint.ClusterLoadAssignment:
		return r.GetClusterName()
	case interface{ GetName() string }:
		return r.GetName()
	}
	return ""
}

// shortForm expands a short form into the resources it stands for.
func (p *parser) shortForm(id, what, form string, n *yaml.Node) ([]Item, error) {
	f, err := p.fields(n, what+" "+form)
	if err != nil {
		return nil, err
	}
	name, err := f.str("name", false)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = id
	}
	var items []Item
	switch form {
	case "listener":
		items, err = oneItem(p.listenerForm(f, what, name))
	case "route":
		items, err = oneItem(p.routeForm(f, what, name))
	case "vhost":
		items, err = oneItem(p.vhostForm(f, what))
	case "cluster":
		items, err = p.clusterForm(f, what, name)
	case "endpoints":
		items, err = p.endpointsForm(f, what, id)
	case "secret":
		items, err = oneItem(p.secretForm(f, what, name))
	}
	if err != nil {
		return nil, err
	}
	if err := f.done(); err != nil {
		return nil, err
	}
	return items, nil
}

// oneItem is a form's single item as a list.
func oneItem(it Item, err error) ([]Item, error) {
	if err != nil {
		return nil, err
	}
	return []Item{it}, nil
}

// formBackends reads the backends a short form lists: each must be one of the scenario's.
func (p *parser) formBackends(f *fields, what, k string) ([]string, error) {
	bs, err := f.strings(k)
	if err != nil {
		return nil, err
	}
	for _, b := range bs {
		if !slices.Contains(p.sc.Backends, b) {
			return nil, p.errf(f.keys[k], "%s: no backend %q (backends: %s)", what, b, strings.Join(p.sc.Backends, ", "))
		}
	}
	return bs, nil
}

// clusterForm is the short-form cluster: with backends, the cluster and its assignment
// (the common case); without, the cluster alone.
func (p *parser) clusterForm(f *fields, what, name string) ([]Item, error) {
	spec := resources.ClusterSpec{Name: name}
	var err error
	if spec.ServiceName, err = f.str("service_name", false); err != nil {
		return nil, err
	}
	if spec.ConnectTimeout, err = f.duration("connect_timeout", time.Millisecond, time.Minute, 0); err != nil {
		return nil, err
	}
	if spec.InitialFetchTimeout, err = f.duration("initial_fetch_timeout", time.Millisecond, time.Minute, 0); err != nil {
		return nil, err
	}
	up, err := f.str("upstream", false)
	if err != nil {
		return nil, err
	}
	switch up {
	case "", "http1":
	case "http2":
		spec.HTTP2 = true
	default:
		return nil, p.errf(f.keys["upstream"], "%s: upstream %q (want http1 or http2)", what, up)
	}
	if spec.HealthCheck, err = p.healthCheck(f, what); err != nil {
		return nil, err
	}
	bs, err := p.formBackends(f, what, "backends")
	if err != nil {
		return nil, err
	}
	items := []Item{{Type: resources.CDS, Name: name, build: func(Env) (types.Resource, error) {
		return resources.BuildCluster(spec)
	}}}
	if f.has("backends") {
		svc := spec.ServiceName
		if svc == "" {
			svc = name
		}
		items = append(items, endpointsItem(svc, bs))
	}
	return items, nil
}

// endpointsForm is the short-form assignment, named by its cluster (the id by default).
func (p *parser) endpointsForm(f *fields, what, id string) ([]Item, error) {
	if f.has("name") {
		return nil, p.errf(f.key["name"], "%s: endpoints are named by their cluster: use cluster:", what)
	}
	cl, err := f.str("cluster", false)
	if err != nil {
		return nil, err
	}
	if cl == "" {
		cl = id
	}
	bs, err := p.formBackends(f, what, "backends")
	if err != nil {
		return nil, err
	}
	return []Item{endpointsItem(cl, bs)}, nil
}

// listenerForm is the short-form listener: the scenario's on_demand puts the on_demand
// filter before the router, and odcds_timeout is its on-demand CDS timeout.
func (p *parser) listenerForm(f *fields, what, name string) (Item, error) {
	spec := resources.ListenerSpec{Name: name, OnDemand: p.sc.OnDemand}
	var err error
	if spec.RouteName, err = f.str("route", true); err != nil {
		return Item{}, err
	}
	if spec.StatPrefix, err = f.str("stat_prefix", false); err != nil {
		return Item{}, err
	}
	if spec.ServerName, err = f.str("server_name", false); err != nil {
		return Item{}, err
	}
	if f.has("odcds_timeout") && !spec.OnDemand.Clusters {
		return Item{}, p.errf(f.key["odcds_timeout"], "%s: odcds_timeout needs clusters on demand (on_demand: [cds])", what)
	}
	if spec.ODCDSTimeout, err = f.duration("odcds_timeout", time.Millisecond, time.Minute, 0); err != nil {
		return Item{}, err
	}
	if spec.TLS, err = p.listenerTLS(f, what); err != nil {
		return Item{}, err
	}
	limit, _, err := f.integer("buffer_limit", MinBufferLimit, MaxBufferLimit)
	if err != nil {
		return Item{}, err
	}
	spec.BufferLimit = uint32(limit)
	return Item{Type: resources.LDS, Name: name, build: func(env Env) (types.Resource, error) {
		s := spec
		s.Port, s.AccessLogPath, s.Proxyless = env.ListenerPort, env.AccessLog, env.Proxyless
		return resources.BuildListener(s)
	}}, nil
}

// routeForm is the short-form route configuration: its routes in one virtual host for
// every domain, or (vhds: true) none, its virtual hosts coming from VHDS.
func (p *parser) routeForm(f *fields, what, name string) (Item, error) {
	spec := resources.RouteSpec{Name: name}
	vhds, err := f.boolean("vhds")
	if err != nil {
		return Item{}, err
	}
	spec.VHDS = vhds != nil && *vhds
	if spec.Rules, err = p.rules(f, what); err != nil {
		return Item{}, err
	}
	switch {
	case spec.VHDS && len(spec.Rules) > 0:
		return Item{}, p.errf(f.n, "%s: a vhds route configuration has no routes of its own: give them as vhost resources", what)
	case !spec.VHDS && len(spec.Rules) == 0:
		return Item{}, p.errf(f.n, "%s: a route needs at least one entry under routes (or vhds: true)", what)
	}
	if _, err := resources.BuildRoute(spec); err != nil {
		return Item{}, p.errf(f.n, "%s: %v", what, err)
	}
	return Item{Type: resources.RDS, Name: name, build: func(Env) (types.Resource, error) {
		return resources.BuildRoute(spec)
	}}, nil
}

// vhostForm is the short-form VHDS virtual host: route and host (or name
// "<route>/<host>"), optional further domains, and routes as a route's.
func (p *parser) vhostForm(f *fields, what string) (Item, error) {
	var spec resources.VirtualHostSpec
	var err error
	if spec.Route, err = f.str("route", false); err != nil {
		return Item{}, err
	}
	if spec.Host, err = f.str("host", false); err != nil {
		return Item{}, err
	}
	if f.has("name") {
		if err := p.vhostName(f, what, &spec); err != nil {
			return Item{}, err
		}
	}
	if spec.Route == "" || spec.Host == "" {
		return Item{}, p.errf(f.n, "%s: a vhost needs route and host (its name is <route>/<host>)", what)
	}
	if spec.Domains, err = f.strings("domains"); err != nil {
		return Item{}, err
	}
	if spec.Rules, err = p.rules(f, what); err != nil {
		return Item{}, err
	}
	if len(spec.Rules) == 0 {
		return Item{}, p.errf(f.n, "%s: a vhost needs at least one entry under routes", what)
	}
	if _, err := resources.BuildVirtualHost(spec); err != nil {
		return Item{}, p.errf(f.n, "%s: %v", what, err)
	}
	return Item{Type: resources.VHDS, Name: resources.VirtualHostName(spec.Route, spec.Host), build: func(Env) (types.Resource, error) {
		return resources.BuildVirtualHost(spec)
	}}, nil
}

// vhostName reads a vhost's name, which must be "<route>/<host>" of its route and host:
// Envoy asks for exactly that name and resumes the held request on it.
func (p *parser) vhostName(f *fields, what string, spec *resources.VirtualHostSpec) error {
	name, _ := f.str("name", false)
	n := f.keys["name"]
	rt, host, ok := resources.SplitVirtualHostName(name)
	switch {
	case !ok || (spec.Route != "" && rt != spec.Route):
		want := "<route>"
		if spec.Route != "" {
			want = spec.Route
		}
		return p.errf(n, "%s: vhost name %q lacks the %q prefix: a virtual host is named <route configuration>/<host>, which Envoy asks for", what, name, want+"/")
	case spec.Host != "" && host != spec.Host:
		return p.errf(n, "%s: host %q is not the host of its name %q: Envoy asks for <route>/<Host> and resumes on that exact name", what, spec.Host, name)
	}
	spec.Route, spec.Host = rt, host
	return nil
}

// rules reads a route's or a vhost's routes.
func (p *parser) rules(f *fields, what string) ([]resources.RouteRule, error) {
	ns, err := f.list("routes")
	if err != nil {
		return nil, err
	}
	var out []resources.RouteRule
	for i, rn := range ns {
		rule, err := p.rule(fmt.Sprintf("%s route %d", what, i+1), rn)
		if err != nil {
			return nil, err
		}
		out = append(out, rule)
	}
	return out, nil
}

func endpointsItem(name string, backends []string) Item {
	return Item{Type: resources.EDS, Name: name, build: func(env Env) (types.Resource, error) {
		ports := make([]int, len(backends))
		for i, b := range backends {
			ports[i] = env.Backends[b]
		}
		return resources.BuildEndpoints(name, ports...), nil
	}}
}

func (p *parser) rule(what string, n *yaml.Node) (resources.RouteRule, error) {
	var r resources.RouteRule
	f, err := p.fields(n, what)
	if err != nil {
		return r, err
	}
	if r.Name, err = f.str("name", false); err != nil {
		return r, err
	}
	if r.Path, err = f.str("path", false); err != nil {
		return r, err
	}
	if r.Prefix, err = f.str("prefix", false); err != nil {
		return r, err
	}
	if r.Cluster, err = f.str("cluster", false); err != nil {
		return r, err
	}
	if r.ClusterHeader, err = f.str("cluster_header", false); err != nil {
		return r, err
	}
	if hn := f.get("headers"); hn != nil {
		hf, err := p.fields(hn, what+" headers")
		if err != nil {
			return r, err
		}
		for i := 0; i+1 < len(hn.Content); i += 2 {
			k := hn.Content[i].Value
			hf.used[k] = true
			v := hn.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				return r, p.errf(v, "%s: header %q: give the exact value, or \"\" to match its presence", what, k)
			}
			r.Headers = append(r.Headers, resources.HeaderMatch{Name: strings.ToLower(k), Exact: v.Value})
		}
	}
	if wn := f.get("weighted"); wn != nil {
		wf, err := p.fields(wn, what+" weighted")
		if err != nil {
			return r, err
		}
		for i := 0; i+1 < len(wn.Content); i += 2 {
			k := wn.Content[i].Value
			wf.used[k] = true
			w, err := strconv.ParseUint(wn.Content[i+1].Value, 10, 32)
			if err != nil || w == 0 {
				return r, p.errf(wn.Content[i+1], "%s: weight of %q must be a positive whole number", what, k)
			}
			r.Weighted = append(r.Weighted, resources.WeightedCluster{Cluster: k, Weight: uint32(w)})
		}
	}
	targets := 0
	for _, set := range []bool{r.Cluster != "", len(r.Weighted) > 0, r.ClusterHeader != ""} {
		if set {
			targets++
		}
	}
	if targets != 1 {
		return r, p.errf(n, "%s: give exactly one of cluster, weighted and cluster_header", what)
	}
	if err := f.done(); err != nil {
		return r, err
	}
	return r, nil
}

// Bounds of a short-form listener's buffer_limit (per_connection_buffer_limit_bytes).
const (
	MinBufferLimit = 1024
	MaxBufferLimit = 1 << 30
)

// healthCheck reads a short-form cluster's health_check: {path, interval, timeout}, an
// active HTTP health check of its endpoints (absent: none).
func (p *parser) healthCheck(f *fields, what string) (resources.HealthCheckSpec, error) {
	var h resources.HealthCheckSpec
	n := f.get("health_check")
	if n == nil {
		return h, nil
	}
	hf, err := p.fields(n, what+" health_check")
	if err != nil {
		return h, err
	}
	if h.Path, err = hf.str("path", true); err != nil {
		return h, err
	}
	if !strings.HasPrefix(h.Path, "/") {
		return h, p.errf(hf.key["path"], "%s health_check: path %q must start with /", what, h.Path)
	}
	if h.Interval, err = hf.duration("interval", 10*time.Millisecond, time.Minute, 0); err != nil {
		return h, err
	}
	if h.Timeout, err = hf.duration("timeout", 10*time.Millisecond, time.Minute, 0); err != nil {
		return h, err
	}
	return h, hf.done()
}
