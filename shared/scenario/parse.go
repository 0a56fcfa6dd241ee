package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/suggest"
)

// Bounds of the durations a file may ask for.
const (
	MaxDown      = 60 * time.Second
	MaxWait      = 60 * time.Second
	MinEvery     = time.Millisecond
	MaxEvery     = time.Second
	DefaultEvery = 10 * time.Millisecond
	// MaxBurst bounds the changes of one burst.
	MaxBurst = 1000
	// MaxFileBytes bounds a scenario file.
	MaxFileBytes = 1 << 20
)

// ParseFile reads and parses one scenario file.
func ParseFile(path string) (*Scenario, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a scenario file may have", path, st.Size(), MaxFileBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, b)
}

// Parse parses and checks a scenario file. file names it in errors, which read
// "file:line: what is wrong". Nothing in the file is used before all of it is valid.
func Parse(file string, data []byte) (*Scenario, error) {
	p := &parser{file: file}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, p.yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.errf(&extra, "more than one YAML document")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty scenario file", file)
	}
	sc, err := p.scenario(doc.Content[0])
	if err != nil {
		return nil, err
	}
	sc.File = file
	return sc, nil
}

type parser struct {
	file string
	sc   *Scenario
}

// Error is a problem in a scenario file, at a line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlParserProblems are the problems go.yaml.in/yaml/v3's parser (parserc.go, as
// opposed to its scanner) reports. For these the library prints its 0-based mark as the
// line (decode.go, parser.fail, adds one for scanner errors only), so an unclosed "[a, b"
// on line 3 reads "line 2": yamlError adds the missing one.
var yamlParserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"found undefined tag handle",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

func (p *parser) yamlError(err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		if slices.Contains(yamlParserProblems, m[2]) {
			line++
		}
		return &Error{File: p.file, Line: line, Msg: m[2]}
	}
	return fmt.Errorf("%s: %s", p.file, strings.TrimPrefix(err.Error(), "yaml: "))
}

// fields is one YAML mapping being read: every key must be read by name, so done can
// name the first unknown one.
type fields struct {
	p    *parser
	n    *yaml.Node
	what string
	keys map[string]*yaml.Node // key -> value
	key  map[string]*yaml.Node // key -> key node (for its line)
	used map[string]bool
	// known is every key the reader asked about, for the unknown-field error.
	known map[string]bool
}

func (p *parser) fields(n *yaml.Node, what string) (*fields, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "%s must be a mapping", what)
	}
	f := &fields{p: p, n: n, what: what, keys: map[string]*yaml.Node{}, key: map[string]*yaml.Node{}, used: map[string]bool{}, known: map[string]bool{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if _, dup := f.keys[k]; dup {
			return nil, p.errf(n.Content[i], "%s: %q is given twice", what, k)
		}
		f.keys[k], f.key[k] = n.Content[i+1], n.Content[i]
	}
	return f, nil
}

func (f *fields) get(k string) *yaml.Node {
	f.used[k], f.known[k] = true, true
	return f.keys[k]
}

func (f *fields) has(k string) bool {
	f.known[k] = true
	return f.keys[k] != nil
}

// done fails on the first key that was not read.
func (f *fields) done() error {
	for i := 0; i < len(f.n.Content); i += 2 {
		if !f.used[f.n.Content[i].Value] {
			return f.unknown(f.n.Content[i])
		}
	}
	return nil
}

// only refuses, before anything is read, a key that is none of keys: a misspelled key
// (backend: for backends:) is named as unknown, rather than its absence reported as
// whatever it leaves missing. done still checks that every key was read.
func (f *fields) only(keys ...string) error {
	for _, k := range keys {
		f.known[k] = true
	}
	for i := 0; i < len(f.n.Content); i += 2 {
		if !f.known[f.n.Content[i].Value] {
			return f.unknown(f.n.Content[i])
		}
	}
	return nil
}

// unknown is the error for key, with the known key nearest to it (shared/suggest).
func (f *fields) unknown(key *yaml.Node) error {
	known := make([]string, 0, len(f.known))
	for u := range f.known {
		known = append(known, u)
	}
	slices.Sort(known)
	return f.p.errf(key, "unknown field %q in %s%s (known: %s)", key.Value, f.what, suggest.Hint(key.Value, known, ""), strings.Join(known, ", "))
}

func (f *fields) str(k string, required bool) (string, error) {
	n := f.get(k)
	if n == nil {
		if required {
			return "", f.p.errf(f.n, "%s: %q is required", f.what, k)
		}
		return "", nil
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", f.p.errf(n, "%s: %q must be a string", f.what, k)
	}
	return n.Value, nil
}

func (f *fields) integer(k string, lo, hi int) (int, bool, error) {
	n := f.get(k)
	if n == nil {
		return 0, false, nil
	}
	v, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return 0, false, f.p.errf(n, "%s: %q must be a whole number", f.what, k)
	}
	if v < lo || v > hi {
		return 0, false, f.p.errf(n, "%s: %q is %d, outside %d..%d", f.what, k, v, lo, hi)
	}
	return v, true, nil
}

func (f *fields) boolean(k string) (*bool, error) {
	n := f.get(k)
	if n == nil {
		return nil, nil
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		return nil, f.p.errf(n, "%s: %q must be true or false", f.what, k)
	}
	return &b, nil
}

func (f *fields) duration(k string, lo, hi, def time.Duration) (time.Duration, error) {
	n := f.get(k)
	if n == nil {
		return def, nil
	}
	return f.p.duration(n, f.what+": "+strconv.Quote(k), lo, hi)
}

func (p *parser) duration(n *yaml.Node, what string, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return 0, p.errf(n, "%s must be a duration such as 500ms or 2s, not %q", what, n.Value)
	}
	if d < lo || d > hi {
		return 0, p.errf(n, "%s is %s, outside %s..%s", what, d, lo, hi)
	}
	return d, nil
}

// strings reads a list of strings; a single string counts as a list of one.
func (f *fields) strings(k string) ([]string, error) {
	n := f.get(k)
	if n == nil {
		return nil, nil
	}
	return f.p.stringList(n, f.what+": "+strconv.Quote(k))
}

func (p *parser) stringList(n *yaml.Node, what string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "%s must be a list of strings", what)
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode {
			return nil, p.errf(c, "%s must be a list of strings", what)
		}
		out = append(out, c.Value)
	}
	return out, nil
}

// list returns the items of a sequence (nil when absent).
func (f *fields) list(k string) ([]*yaml.Node, error) {
	n := f.get(k)
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, f.p.errf(n, "%s: %q must be a list", f.what, k)
	}
	return n.Content, nil
}

// scenarioKeys are the keys of a scenario file's top level: every other key is refused
// before the file is read further (fields.only).
var scenarioKeys = []string{"name", "description", "sources", "backends", "on_demand", "modes", "bootstrap", "not_for", "load", "resources", "steps"}

var safeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

func (p *parser) scenario(root *yaml.Node) (*Scenario, error) {
	f, err := p.fields(root, "the scenario")
	if err != nil {
		return nil, err
	}
	if err := f.only(scenarioKeys...); err != nil {
		return nil, err
	}
	sc := &Scenario{Resources: map[string]*Resource{}}
	p.sc = sc
	if err := p.settings(sc, f); err != nil {
		return nil, err
	}
	rn := f.get("resources")
	if rn == nil {
		return nil, p.errf(root, "the scenario: \"resources\" is required")
	}
	if err := p.resources(sc, rn); err != nil {
		return nil, err
	}
	if sc.Steps, err = p.steps(root, f); err != nil {
		return nil, err
	}
	if err := f.done(); err != nil {
		return nil, err
	}
	if err := p.checkStates(); err != nil {
		return nil, err
	}
	return sc, nil
}

// settings reads what the scenario says before its resources: its name and
// description, the backends, on-demand, bootstrap, the clients it is not for and its load.
func (p *parser) settings(sc *Scenario, f *fields) error {
	var err error
	if sc.Name, err = f.str("name", true); err != nil {
		return err
	}
	if !safeName.MatchString(sc.Name) {
		return p.errf(f.keys["name"], "name %q: use lower-case letters, digits, '.', '-' and '_'", sc.Name)
	}
	if sc.Description, err = f.str("description", true); err != nil {
		return err
	}
	if sc.Sources, err = f.strings("sources"); err != nil {
		return err
	}
	if sc.Backends, sc.Behaviours, err = p.backends(f); err != nil {
		return err
	}
	if err := p.onDemand(f); err != nil {
		return err
	}
	if err := p.checkBackendNames(f, sc.Backends); err != nil {
		return err
	}
	if n := f.get("bootstrap"); n != nil {
		if sc.Bootstrap, err = p.bootstrap(n); err != nil {
			return err
		}
	}
	if sc.NotFor, err = p.notFor(f); err != nil {
		return err
	}
	if ln := f.get("load"); ln != nil {
		if sc.Load, err = p.load(ln); err != nil {
			return err
		}
	}
	return nil
}

// checkBackendNames: safe, distinct names, at most 8 of them.
func (p *parser) checkBackendNames(f *fields, backends []string) error {
	seen := map[string]bool{}
	for _, b := range backends {
		if !safeName.MatchString(b) {
			return p.errf(f.keys["backends"], "backend %q: use lower-case letters, digits, '.', '-' and '_'", b)
		}
		if seen[b] {
			return p.errf(f.keys["backends"], "backend %q is listed twice", b)
		}
		seen[b] = true
	}
	if len(backends) > 8 {
		return p.errf(f.keys["backends"], "%d backends: at most 8", len(backends))
	}
	return nil
}

// bootstrap checks that the bootstrap is YAML text of a mapping (merged over Envoy's
// bootstrap) and returns the text.
func (p *parser) bootstrap(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, "bootstrap must be a block of YAML text (bootstrap: |)")
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(n.Value), &m); err != nil || len(m) == 0 {
		return "", p.errf(n, "bootstrap must be a YAML mapping merged over Envoy's bootstrap")
	}
	return n.Value, nil
}

// resources reads the scenario's resources, by id, into sc.
func (p *parser) resources(sc *Scenario, rn *yaml.Node) error {
	rf, err := p.fields(rn, "resources")
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(rn.Content); i += 2 {
		id := rn.Content[i].Value
		rf.used[id] = true
		r, err := p.resource(id, rn.Content[i], rn.Content[i+1])
		if err != nil {
			return err
		}
		sc.Resources[id] = r
	}
	return nil
}

// steps reads the scenario's steps: at least one, the first a publish, no name or
// checkpoint given twice.
func (p *parser) steps(root *yaml.Node, f *fields) ([]Step, error) {
	steps, err := f.list("steps")
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, p.errf(root, "the scenario has no steps")
	}
	var out []Step
	names, checkpoints := map[string]bool{}, map[string]bool{}
	for i, sn := range steps {
		st, err := p.step(sn)
		if err != nil {
			return nil, err
		}
		if i == 0 && st.Action != Publish {
			return nil, p.errf(sn, "step %q: the first step must publish a state", st.Name)
		}
		if names[st.Name] {
			return nil, p.errf(sn, "step %q is given twice", st.Name)
		}
		if checkpoints[st.Checkpoint] {
			return nil, p.errf(sn, "checkpoint %q is given twice", st.Checkpoint)
		}
		names[st.Name], checkpoints[st.Checkpoint] = true, true
		out = append(out, st)
	}
	return out, nil
}

// onDemand reads the scenario's on_demand (a list, or "vhds,cds": resources.ParseOnDemand)
// and modes. An on-demand scenario runs in delta only: modes defaults to [delta], and a
// mode list with sotw is refused with the reason (resources.ErrOnDemandNeedsDelta).
func (p *parser) onDemand(f *fields) error {
	if n := f.get("on_demand"); n != nil {
		parts, err := p.stringList(n, "on_demand")
		if err != nil {
			return err
		}
		if p.sc.OnDemand, err = resources.ParseOnDemand(strings.Join(parts, ",")); err != nil {
			return p.errf(n, "on_demand: %v", err)
		}
	}
	names, err := f.strings("modes")
	if err != nil {
		return err
	}
	var modes []protocol.Mode
	for _, name := range names {
		m, err := protocol.ParseMode(name)
		if err != nil {
			return p.errf(f.keys["modes"], "modes: %q (want sotw or delta)", name)
		}
		if slices.Contains(modes, m) {
			return p.errf(f.keys["modes"], "modes: %q is listed twice", m)
		}
		if err := p.sc.OnDemand.CheckMode(m == protocol.SotW); err != nil {
			return p.errf(f.keys["modes"], "modes: on_demand %s cannot run in %s: %v", p.sc.OnDemand, m, err)
		}
		modes = append(modes, m)
	}
	if len(modes) == 0 && p.sc.OnDemand.Any() {
		modes = []protocol.Mode{protocol.Delta}
	}
	p.sc.Modes = modes
	return nil
}

// checkStates builds every state the steps publish, in order, against placeholder
// ports: what only a whole state can show (two virtual hosts claiming one domain, a
// virtual host named after a route configuration without vhds) is refused before
// anything runs, at the step that publishes it.
func (p *parser) checkStates() error {
	d := NewDesired(p.sc)
	env := checkEnv(p.sc.Backends)
	for _, st := range p.sc.Steps {
		changes := append(append([]Change{st.Change}, st.Burst...), st.Changes...)
		for _, c := range changes {
			if len(c.Upsert)+len(c.Delete) == 0 {
				continue
			}
			v, err := d.Apply(c)
			if err != nil {
				return &Error{File: p.file, Line: st.Line, Msg: fmt.Sprintf("step %q: %v", st.Name, err)}
			}
			if _, err := d.Set(v, env); err != nil {
				return &Error{File: p.file, Line: st.Line, Msg: fmt.Sprintf("step %q: %v", st.Name, err)}
			}
		}
	}
	return nil
}

// Resource forms: the full v3 forms by type, and the short forms.
var fullForms = map[string]resources.Type{"lds": resources.LDS, "rds": resources.RDS, "cds": resources.CDS, "eds": resources.EDS, "vhds": resources.VHDS}

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
	for _, k := range []string{"listener", "route", "vhost", "cluster", "endpoints", "lds", "rds", "cds", "eds", "vhds"} {
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
		return nil, p.errf(n, "%s needs exactly one of listener, route, vhost, cluster, endpoints (short forms) or lds, rds, cds, eds, vhds (Envoy's v3 form); got %d", what, len(forms))
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

var validCaches = []string{"snapshot", "linear", "indexed"}

// validClients are the data planes a filter or not_for may name.
var validClients = []string{"envoy", "grpc", "simulated"}

// notFor reads not_for: client -> the one-line reason the scenario does not apply to it.
// Only grpc is taken: Envoy is what the pack is written for, and the simulated client's
// limits are the runner's (errSimOnDemand).
func (p *parser) notFor(f *fields) (map[string]string, error) {
	n := f.get("not_for")
	if n == nil {
		return nil, nil
	}
	var m map[string]string
	if err := n.Decode(&m); err != nil || len(m) == 0 {
		return nil, p.errf(n, "not_for must map a client (grpc) to the reason the scenario does not apply to it")
	}
	for client, why := range m {
		switch {
		case client != "grpc":
			return nil, p.errf(n, "not_for: client %q (want grpc)", client)
		case strings.TrimSpace(why) == "" || strings.Contains(strings.TrimSpace(why), "\n"):
			return nil, p.errf(n, "not_for %s: give the reason in one line", client)
		}
		m[client] = strings.TrimSpace(why)
	}
	return m, nil
}

func (p *parser) filter(f *fields) (Filter, error) {
	var flt Filter
	mode, err := f.str("mode", false)
	if err != nil {
		return flt, err
	}
	if mode != "" {
		if flt.Mode, err = protocol.ParseMode(mode); err != nil {
			return flt, p.errf(f.keys["mode"], "%s: mode %q (want sotw or delta)", f.what, mode)
		}
	}
	if flt.Cache, err = f.str("cache", false); err != nil {
		return flt, err
	}
	if flt.Cache != "" && !slices.Contains(validCaches, flt.Cache) {
		return flt, p.errf(f.keys["cache"], "%s: cache %q (want snapshot, linear or indexed)", f.what, flt.Cache)
	}
	if flt.Client, err = f.str("client", false); err != nil {
		return flt, err
	}
	if flt.Client != "" && !slices.Contains(validClients, flt.Client) {
		return flt, p.errf(f.keys["client"], "%s: client %q (want envoy, grpc or simulated)", f.what, flt.Client)
	}
	if flt.SotWVersions, err = f.str("sotw_versions", false); err != nil {
		return flt, err
	}
	if flt.SotWVersions != "" && flt.SotWVersions != "uniform" && flt.SotWVersions != "per-type" {
		return flt, p.errf(f.keys["sotw_versions"], "%s: sotw_versions %q (want uniform or per-type)", f.what, flt.SotWVersions)
	}
	return flt, nil
}

func (p *parser) step(n *yaml.Node) (Step, error) {
	st := Step{Line: n.Line}
	f, err := p.fields(n, "a step")
	if err != nil {
		return st, err
	}
	if st.Name, err = f.str("name", true); err != nil {
		return st, err
	}
	if !safeName.MatchString(st.Name) {
		return st, p.errf(f.keys["name"], "step name %q: use lower-case letters, digits, '.', '-' and '_'", st.Name)
	}
	what := fmt.Sprintf("step %q", st.Name)
	f.what = what
	if err := f.only(stepKeys()...); err != nil {
		return st, err
	}
	if st.Checkpoint, err = f.str("checkpoint", false); err != nil {
		return st, err
	}
	if st.Checkpoint == "" {
		st.Checkpoint = st.Name
	}
	if !safeName.MatchString(st.Checkpoint) {
		return st, p.errf(f.keys["checkpoint"], "%s: checkpoint %q: use lower-case letters, digits, '.', '-' and '_'", what, st.Checkpoint)
	}
	if st.Proves, err = f.str("proves", false); err != nil {
		return st, err
	}
	if err := p.action(&st, f, n, what); err != nil {
		return st, err
	}
	if en := f.get("expect"); en != nil {
		if st.Expect, err = p.expect(what, en); err != nil {
			return st, err
		}
	}
	if err := f.done(); err != nil {
		return st, err
	}
	return st, nil
}

// stepKeys are the keys of a step: its settings and the actions (fields.only).
func stepKeys() []string {
	keys := []string{"name", "checkpoint", "proves", "expect"}
	for _, a := range Actions {
		keys = append(keys, string(a))
	}
	return keys
}

// action reads the step's one action into st, with its settings.
func (p *parser) action(st *Step, f *fields, n *yaml.Node, what string) error {
	var actions []Action
	for _, a := range Actions {
		if f.has(string(a)) {
			actions = append(actions, a)
		}
	}
	if len(actions) != 1 {
		names := make([]string, len(Actions))
		for i, a := range Actions {
			names[i] = string(a)
		}
		// Every key counts as read: the missing or extra action is the error to show.
		for k := range f.keys {
			f.used[k] = true
		}
		return p.errf(n, "%s needs exactly one action (%s); got %d", what, strings.Join(names, ", "), len(actions))
	}
	st.Action = actions[0]
	an := f.get(string(st.Action))
	var err error
	switch st.Action {
	case Publish:
		return p.publish(st, what, an)
	case RestartEnvoy, KillEnvoy:
		if !(an.Kind == yaml.MappingNode && len(an.Content) == 0) && an.Tag != "!!null" && !(an.Kind == yaml.ScalarNode && an.Value == "true") {
			return p.errf(an, "%s: %s takes no settings (write %s: {})", what, st.Action, st.Action)
		}
	case Wait:
		st.Duration, err = p.duration(an, what+" wait", 0, MaxWait)
	case RestartControlPlane:
		return p.restartControlPlane(st, what, an)
	}
	return err
}

// publish reads a publish action: one change, or a burst of changes published every
// so often.
func (p *parser) publish(st *Step, what string, an *yaml.Node) error {
	if an.Kind == yaml.MappingNode {
		if bf, _ := p.fields(an, what+" publish"); bf != nil && bf.has("burst") {
			return p.burst(st, what, an, bf)
		}
	}
	var err error
	st.Change, err = p.change(what+" publish", an)
	return err
}

// burst reads publish: {burst: [changes], every: d}.
func (p *parser) burst(st *Step, what string, an *yaml.Node, bf *fields) error {
	items, err := bf.list("burst")
	if err != nil {
		return err
	}
	if len(items) < 2 || len(items) > MaxBurst {
		return p.errf(an, "%s: a burst has 2..%d changes, not %d", what, MaxBurst, len(items))
	}
	for i, in := range items {
		c, err := p.change(fmt.Sprintf("%s publish burst %d", what, i+1), in)
		if err != nil {
			return err
		}
		st.Burst = append(st.Burst, c)
	}
	if st.BurstEvery, err = bf.duration("every", 0, time.Second, 0); err != nil {
		return err
	}
	return bf.done()
}

// restartControlPlane reads a restart-control-plane action: how long it stays down,
// and the changes to publish meanwhile (with Envoy held, hold_envoy).
func (p *parser) restartControlPlane(st *Step, what string, an *yaml.Node) error {
	rf, err := p.fields(an, what+" restart-control-plane")
	if err != nil {
		if an.Tag == "!!null" {
			return nil
		}
		return err
	}
	if st.Down, err = rf.duration("down", 0, MaxDown, 0); err != nil {
		return err
	}
	hold, err := rf.boolean("hold_envoy")
	if err != nil {
		return err
	}
	st.HoldEnvoy = hold != nil && *hold
	ps, err := rf.list("publish")
	if err != nil {
		return err
	}
	for i, pn := range ps {
		c, err := p.change(fmt.Sprintf("%s restart-control-plane publish %d", what, i+1), pn)
		if err != nil {
			return err
		}
		st.Changes = append(st.Changes, c)
	}
	if st.HoldEnvoy && len(st.Changes) == 0 {
		return p.errf(an, "%s: hold_envoy needs publish: the changes to make while Envoy is held", what)
	}
	return rf.done()
}

func (p *parser) change(what string, n *yaml.Node) (Change, error) {
	var c Change
	f, err := p.fields(n, what)
	if err != nil {
		return c, err
	}
	if c.Version, err = f.str("version", false); err != nil {
		return c, err
	}
	if c.Upsert, err = f.strings("upsert"); err != nil {
		return c, err
	}
	if c.Delete, err = f.strings("delete"); err != nil {
		return c, err
	}
	if len(c.Upsert)+len(c.Delete) == 0 {
		return c, p.errf(n, "%s: nothing to upsert or delete", what)
	}
	defined := map[Key]string{}
	for _, k := range []string{"upsert", "delete"} {
		ids := c.Upsert
		if k == "delete" {
			ids = c.Delete
		}
		for _, id := range ids {
			r, ok := p.sc.Resources[id]
			if !ok {
				return c, p.errf(f.keys[k], "%s: %s: no resource %q (resources: %s)", what, k, id, strings.Join(p.ids(), ", "))
			}
			if k != "upsert" {
				continue
			}
			for _, it := range r.Items {
				key := Key{it.Type, it.Name}
				if other, dup := defined[key]; dup {
					return c, p.errf(f.keys[k], "%s: %s is defined by both %q and %q", what, key, other, id)
				}
				defined[key] = id
			}
		}
	}
	if err := f.done(); err != nil {
		return c, err
	}
	return c, nil
}

func (p *parser) ids() []string {
	out := make([]string, 0, len(p.sc.Resources))
	for id := range p.sc.Resources {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// ref reads "TYPE/name" and checks that some resource of the file defines it.
func (p *parser) ref(what string, n *yaml.Node) (resources.Type, string, error) {
	t, name, ok := strings.Cut(n.Value, "/")
	typ := resources.Type(strings.ToUpper(t))
	if !ok || typ.URL() == "" || name == "" {
		return "", "", p.errf(n, "%s: resource %q: write TYPE/name, e.g. CDS/inventory", what, n.Value)
	}
	for _, r := range p.sc.Resources {
		for _, it := range r.Items {
			if it.Type == typ && it.Name == name {
				return typ, name, nil
			}
		}
	}
	return "", "", p.errf(n, "%s: no resource of the scenario is %s/%s", what, typ, name)
}

func (p *parser) checkBackend(what string, n *yaml.Node, b string) error {
	if b != "" && !slices.Contains(p.sc.Backends, b) {
		return p.errf(n, "%s: no backend %q (backends: %s)", what, b, strings.Join(p.sc.Backends, ", "))
	}
	return nil
}

func (p *parser) request(f *fields) (Request, error) {
	var r Request
	var err error
	if r.Path, err = f.str("path", true); err != nil {
		return r, err
	}
	if !strings.HasPrefix(r.Path, "/") {
		return r, p.errf(f.keys["path"], "%s: path %q must start with /", f.what, r.Path)
	}
	if r.Host, err = f.str("host", false); err != nil {
		return r, err
	}
	if strings.ContainsAny(r.Host, "/ \t") {
		return r, p.errf(f.keys["host"], "%s: host %q: a Host header has no '/' or spaces", f.what, r.Host)
	}
	if hn := f.get("headers"); hn != nil {
		hf, err := p.fields(hn, f.what+" headers")
		if err != nil {
			return r, err
		}
		r.Headers = map[string]string{}
		for i := 0; i+1 < len(hn.Content); i += 2 {
			hf.used[hn.Content[i].Value] = true
			r.Headers[strings.ToLower(hn.Content[i].Value)] = hn.Content[i+1].Value
		}
	}
	return r, nil
}

// expect parses a step's expect: each kind of expectation has its own parser below, read
// in this order so that the first error a scenario shows does not move.
func (p *parser) expect(step string, n *yaml.Node) (Expect, error) {
	var e Expect
	what := step + " expect"
	f, err := p.fields(n, what)
	if err != nil {
		return e, err
	}
	if e.Accepted, err = f.boolean("accepted"); err != nil {
		return e, err
	}
	if nn := f.get("nack"); nn != nil {
		if e.Nacks, err = p.nackExpects(what, nn); err != nil {
			return e, err
		}
	}
	if e.Requests, err = listOf(p, f, "requests", what+" request", p.requestExpect); err != nil {
		return e, err
	}
	if wn := f.get("window"); wn != nil {
		if e.Window, err = p.windowExpect(what, wn); err != nil {
			return e, err
		}
	}
	if tn := f.get("traffic"); tn != nil {
		if e.Traffic, err = p.traffic(what, tn); err != nil {
			return e, err
		}
	}
	if e.Versions, err = listOf(p, f, "versions", what+" version", p.versionExpect); err != nil {
		return e, err
	}
	if e.Envoy, err = listOf(p, f, "envoy", what+" envoy state", p.envoyStateExpect); err != nil {
		return e, err
	}
	if e.Stats, err = listOf(p, f, "stats", what+" stat", p.statExpect); err != nil {
		return e, err
	}
	if err := f.done(); err != nil {
		return e, err
	}
	return e, nil
}

// listOf parses each mapping of the list k with parseItem, naming the i-th "<what> <i>"
// in errors and failing on a key parseItem did not read (nil when the list is absent).
func listOf[T any](p *parser, f *fields, k, what string, parseItem func(n *yaml.Node, f *fields) (T, error)) ([]T, error) {
	ns, err := f.list(k)
	if err != nil {
		return nil, err
	}
	var out []T
	for i, n := range ns {
		nf, err := p.fields(n, fmt.Sprintf("%s %d", what, i+1))
		if err != nil {
			return out, err
		}
		v, err := parseItem(n, nf)
		if err != nil {
			return out, err
		}
		if err := nf.done(); err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// nackExpects parses expect nack: a type, a mapping with a type and a filter, or a list
// of either.
func (p *parser) nackExpects(what string, nn *yaml.Node) ([]NackExpect, error) {
	items := []*yaml.Node{nn}
	if nn.Kind == yaml.SequenceNode {
		items = nn.Content
	}
	var out []NackExpect
	for _, in := range items {
		var ne NackExpect
		tn := in
		if in.Kind == yaml.MappingNode {
			nf, err := p.fields(in, what+" nack")
			if err != nil {
				return out, err
			}
			if ne.Filter, err = p.filter(nf); err != nil {
				return out, err
			}
			if tn = nf.get("type"); tn == nil {
				return out, p.errf(in, "%s nack: \"type\" is required", what)
			}
			if err := nf.done(); err != nil {
				return out, err
			}
		}
		ne.Type = resources.Type(strings.ToUpper(tn.Value))
		if ne.Type.URL() == "" {
			return out, p.errf(tn, "%s: nack type %q (want LDS, RDS, CDS or EDS)", what, tn.Value)
		}
		out = append(out, ne)
	}
	return out, nil
}

// requestExpect parses one of expect requests: a request and the answer it must get.
func (p *parser) requestExpect(rn *yaml.Node, rf *fields) (RequestExpect, error) {
	re := RequestExpect{Line: rn.Line}
	var err error
	if re.Filter, err = p.filter(rf); err != nil {
		return re, err
	}
	if re.Request, err = p.request(rf); err != nil {
		return re, err
	}
	st, ok, err := rf.integer("status", 0, 599)
	if err != nil {
		return re, err
	}
	if !ok {
		return re, p.errf(rn, "%s: \"status\" is required", rf.what)
	}
	re.Status = st
	if re.Backend, err = rf.str("backend", false); err != nil {
		return re, err
	}
	if err := p.checkBackend(rf.what, rf.keys["backend"], re.Backend); err != nil {
		return re, err
	}
	if re.Flags, err = rf.str("flags", false); err != nil {
		return re, err
	}
	return re, nil
}

// windowExpect parses expect window: a request probed through the step and how many of
// its answers may fail.
func (p *parser) windowExpect(what string, wn *yaml.Node) (*WindowExpect, error) {
	wf, err := p.fields(wn, what+" window")
	if err != nil {
		return nil, err
	}
	w := &WindowExpect{Line: wn.Line}
	if w.Filter, err = p.filter(wf); err != nil {
		return nil, err
	}
	if w.Request, err = p.request(wf); err != nil {
		return nil, err
	}
	if w.Every, err = wf.duration("every", MinEvery, MaxEvery, DefaultEvery); err != nil {
		return nil, err
	}
	mx, ok, err := wf.integer("max_failures", 0, 1<<30)
	if err != nil {
		return nil, err
	}
	w.MaxFailures = mx
	if !ok {
		w.MaxFailures = 1 << 30
	}
	if w.MinFailures, _, err = wf.integer("min_failures", 0, 1<<30); err != nil {
		return nil, err
	}
	if w.MinFailures > w.MaxFailures {
		return nil, p.errf(wn, "%s: min_failures %d is more than max_failures %d", wf.what, w.MinFailures, w.MaxFailures)
	}
	if w.Flags, err = wf.strings("flags"); err != nil {
		return nil, err
	}
	if err := wf.done(); err != nil {
		return nil, err
	}
	return w, nil
}

// versionExpect parses one of expect versions: whether a resource's version moves.
func (p *parser) versionExpect(vn *yaml.Node, vf *fields) (VersionExpect, error) {
	ve := VersionExpect{Line: vn.Line}
	var err error
	if ve.Filter, err = p.filter(vf); err != nil {
		return ve, err
	}
	rn := vf.get("resource")
	if rn == nil {
		return ve, p.errf(vn, "%s: \"resource\" is required", vf.what)
	}
	if ve.Type, ve.Name, err = p.ref(vf.what, rn); err != nil {
		return ve, err
	}
	mv, err := vf.boolean("moves")
	if err != nil {
		return ve, err
	}
	if mv == nil {
		return ve, p.errf(vn, "%s: \"moves\" (true or false) is required", vf.what)
	}
	ve.Moves = *mv
	return ve, nil
}

// envoyStateExpect parses one of expect envoy: the state Envoy reports for a resource,
// one its type can have (only clusters warm; only listeners warm and drain).
func (p *parser) envoyStateExpect(sn *yaml.Node, sf *fields) (EnvoyStateExpect, error) {
	se := EnvoyStateExpect{Line: sn.Line}
	var err error
	if se.Filter, err = p.filter(sf); err != nil {
		return se, err
	}
	rn := sf.get("resource")
	if rn == nil {
		return se, p.errf(sn, "%s: \"resource\" is required", sf.what)
	}
	if se.Type, se.Name, err = p.ref(sf.what, rn); err != nil {
		return se, err
	}
	if se.State, err = sf.str("state", true); err != nil {
		return se, err
	}
	allowed := []string{StateActive, StateAbsent}
	switch se.Type {
	case resources.CDS:
		allowed = append(allowed, StateWarming)
	case resources.LDS:
		allowed = append(allowed, StateWarming, StateDraining)
	}
	if !slices.Contains(allowed, se.State) {
		return se, p.errf(sf.keys["state"], "%s: state %q of %s (want %s)", sf.what, se.State, se.Type, strings.Join(allowed, ", "))
	}
	return se, nil
}

// statExpect parses one of expect stats: an Envoy stat compared, as a value or as its
// rise over the step (delta), with a number.
func (p *parser) statExpect(sn *yaml.Node, sf *fields) (StatExpect, error) {
	se := StatExpect{Line: sn.Line}
	var err error
	if se.Filter, err = p.filter(sf); err != nil {
		return se, err
	}
	if se.Name, err = sf.str("name", true); err != nil {
		return se, err
	}
	var cmpNode *yaml.Node
	switch {
	case sf.has("delta") && sf.has("value"):
		return se, p.errf(sn, "%s: give delta or value, not both", sf.what)
	case sf.has("delta"):
		se.Delta, cmpNode = true, sf.get("delta")
	case sf.has("value"):
		cmpNode = sf.get("value")
	default:
		return se, p.errf(sn, "%s: give delta (the rise over the step) or value, e.g. delta: \">= 1\"", sf.what)
	}
	if se.Op, se.Value, err = parseComparison(cmpNode.Value); err != nil {
		return se, p.errf(cmpNode, "%s: %v", sf.what, err)
	}
	return se, nil
}

// backends parses the backend list: names, or mappings of a name and its behaviour
// ({name: v1, delay: 100ms, connection_close: true, idle_timeout: 1s}).
func (p *parser) backends(f *fields) ([]string, map[string]Behaviour, error) {
	n := f.get("backends")
	if n == nil {
		return nil, nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.plainBackends(n)
	}
	var names []string
	var bh map[string]Behaviour
	for _, c := range n.Content {
		if c.Kind != yaml.MappingNode {
			if c.Kind != yaml.ScalarNode {
				return nil, nil, p.errf(c, "backends: each is a name or {name: ..., delay: ..., connection_close: ..., idle_timeout: ...}")
			}
			names = append(names, c.Value)
			continue
		}
		bf, err := p.fields(c, "backend")
		if err != nil {
			return nil, nil, err
		}
		name, err := bf.str("name", true)
		if err != nil {
			return nil, nil, err
		}
		var b Behaviour
		if b.Delay, err = bf.duration("delay", 0, MaxBackendDelay, 0); err != nil {
			return nil, nil, err
		}
		cc, err := bf.boolean("connection_close")
		if err != nil {
			return nil, nil, err
		}
		b.ConnectionClose = cc != nil && *cc
		if b.IdleTimeout, err = bf.duration("idle_timeout", time.Millisecond, time.Hour, 0); err != nil {
			return nil, nil, err
		}
		if err := bf.done(); err != nil {
			return nil, nil, err
		}
		if bh == nil {
			bh = map[string]Behaviour{}
		}
		names, bh[name] = append(names, name), b
	}
	return names, bh, nil
}

func (p *parser) plainBackends(n *yaml.Node) ([]string, map[string]Behaviour, error) {
	names, err := p.stringList(n, `the scenario: "backends"`)
	return names, nil, err
}

// load parses the scenario's steady load.
func (p *parser) load(n *yaml.Node) (*LoadSpec, error) {
	f, err := p.fields(n, "load")
	if err != nil {
		return nil, err
	}
	l := &LoadSpec{Line: n.Line}
	var ok bool
	if l.Rate, ok, err = f.integer("rate", 1, 1<<20); err != nil {
		return nil, err
	}
	if !ok {
		return nil, p.errf(n, "load: \"rate\" (requests per second) is required")
	}
	if l.Connections, ok, err = f.integer("connections", 1, 1<<20); err != nil {
		return nil, err
	}
	if !ok {
		l.Connections = 1
	}
	if l.Protocol, err = f.str("protocol", false); err != nil {
		return nil, err
	}
	switch l.Protocol {
	case "":
		l.Protocol = "http1"
	case "http1", "http2":
	default:
		return nil, p.errf(f.keys["protocol"], "load: protocol %q (want http1 or http2)", l.Protocol)
	}
	if l.Path, err = f.str("path", false); err != nil {
		return nil, err
	}
	if l.Path != "" && !strings.HasPrefix(l.Path, "/") {
		return nil, p.errf(f.keys["path"], "load: path %q must start with /", l.Path)
	}
	return l, f.done()
}

// traffic parses a step's expectation on its share of the load.
func (p *parser) traffic(what string, n *yaml.Node) (*TrafficExpect, error) {
	f, err := p.fields(n, what+" traffic")
	if err != nil {
		return nil, err
	}
	t := &TrafficExpect{Line: n.Line}
	if t.Filter, err = p.filter(f); err != nil {
		return nil, err
	}
	if t.For, err = f.duration("for", 0, MaxTrafficFor, DefaultTrafficFor); err != nil {
		return nil, err
	}
	mx, ok, err := f.integer("max_failures", 0, 1<<30)
	if err != nil {
		return nil, err
	}
	t.MaxFailures = mx
	if !ok {
		t.MaxFailures = 1 << 30
	}
	if t.MinFailures, _, err = f.integer("min_failures", 0, 1<<30); err != nil {
		return nil, err
	}
	if t.MinFailures > t.MaxFailures {
		return nil, p.errf(n, "%s: min_failures %d is more than max_failures %d", f.what, t.MinFailures, t.MaxFailures)
	}
	if t.Failures, err = f.strings("failures"); err != nil {
		return nil, err
	}
	if t.Backends, err = f.strings("backends"); err != nil {
		return nil, err
	}
	for _, b := range t.Backends {
		if err := p.checkBackend(f.what, f.keys["backends"], b); err != nil {
			return nil, err
		}
	}
	if t.EndsOn, err = f.str("ends_on", false); err != nil {
		return nil, err
	}
	if err := p.checkBackend(f.what, f.keys["ends_on"], t.EndsOn); err != nil {
		return nil, err
	}
	return t, f.done()
}

var comparison = regexp.MustCompile(`^\s*(==|>=|<=|>|<)?\s*(-?\d+)\s*$`)

func parseComparison(s string) (string, int64, error) {
	m := comparison.FindStringSubmatch(s)
	if m == nil {
		return "", 0, errors.New(`write a comparison such as ">= 1", "== 0" or "2"`)
	}
	v, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("%q: %w", m[2], err)
	}
	op := m[1]
	if op == "" {
		op = "=="
	}
	return op, v, nil
}
