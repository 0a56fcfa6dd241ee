package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xds-workbench/lab/shared/resources"
)

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
	tls, err := f.boolean("tls")
	if err != nil {
		return r, err
	}
	r.TLS = tls != nil && *tls
	conn, err := f.str("conn", false)
	if err != nil {
		return r, err
	}
	switch conn {
	case "", "new":
	case "held":
		r.Held = true
	default:
		return r, p.errf(f.keys["conn"], "%s: conn is new (a fresh connection, the default) or held (the run's one kept-alive connection), not %q", f.what, conn)
	}
	return r, nil
}
