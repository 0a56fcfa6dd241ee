package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// scenarioKeys are the keys of a scenario file's top level: every other key is refused
// before the file is read further (fields.only).
var scenarioKeys = []string{"name", "description", "sources", "backends", "on_demand", "modes", "bootstrap", "not_for", "load", "drain_time", "resources", "steps"}

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
	if err := p.checkSecretRefs(); err != nil {
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
	return p.drainTime(sc, f)
}

// drainTime reads drain_time: Envoy's --drain-time-s for the run, whole seconds within
// MinDrainTime..MaxDrainTime (absent: Envoy's own 600 s).
func (p *parser) drainTime(sc *Scenario, f *fields) error {
	d, err := f.duration("drain_time", MinDrainTime, MaxDrainTime, 0)
	if err != nil {
		return err
	}
	if d%time.Second != 0 {
		return p.errf(f.keys["drain_time"], "%s: %q is %s: not whole seconds (Envoy's --drain-time-s takes seconds)", f.what, "drain_time", d)
	}
	sc.DrainTime = d
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
				return nil, nil, p.errf(c, "backends: each is a name or {name: ..., delay: ..., connection_close: ..., idle_timeout: ..., health_delay: ...}")
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
		if b.HealthDelay, err = bf.duration("health_delay", 0, MaxBackendDelay, 0); err != nil {
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
