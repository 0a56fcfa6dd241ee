package scenario

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

var validCaches = []string{"snapshot", "snapshot-noads", "linear", "indexed"}

// validClients are the data planes a filter or not_for may name.
var validClients = []string{"envoy", "grpc", "simulated"}

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
		return flt, p.errf(f.keys["cache"], "%s: cache %q (want snapshot, snapshot-noads, linear or indexed)", f.what, flt.Cache)
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
	if e.Sent, err = listOf(p, f, "sent", what+" sent", p.sentExpect); err != nil {
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
	return re, p.tlsExpect(rn, rf, &re)
}

// tlsExpect reads what a TLS request's handshake must show: cert_serial, cert_cn and
// handshake (ok or reset; a reset has no HTTP status, so status 0).
func (p *parser) tlsExpect(rn *yaml.Node, rf *fields, re *RequestExpect) error {
	var err error
	if re.CertSerial, err = rf.str("cert_serial", false); err != nil {
		return err
	}
	if re.CertCN, err = rf.str("cert_cn", false); err != nil {
		return err
	}
	if re.Handshake, err = rf.str("handshake", false); err != nil {
		return err
	}
	switch {
	case re.Handshake != "" && !slices.Contains(handshakes, re.Handshake):
		return p.errf(rf.keys["handshake"], "%s: handshake is one of %s, not %q", rf.what, strings.Join(handshakes, ", "), re.Handshake)
	case (re.CertSerial != "" || re.CertCN != "" || re.Handshake != "") && !re.TLS:
		return p.errf(rn, "%s: cert_serial, cert_cn and handshake need tls: true", rf.what)
	case re.Handshake != "" && re.Handshake != HandshakeOK && (re.Status != 0 || re.CertSerial != "" || re.CertCN != ""):
		return p.errf(rn, "%s: a handshake that did not complete has no status (status: 0) and no certificate", rf.what)
	}
	if re.ConnClose, err = rf.boolean("conn_close"); err != nil {
		return err
	}
	if re.ConnClose != nil && !re.Held {
		return p.errf(rf.keys["conn_close"], "%s: conn_close is what the held connection's answer says (Connection: close); it needs conn: held", rf.what)
	}
	return nil
}

// sentExpect parses one of expect sent: the types the control plane sent in the step.
func (p *parser) sentExpect(sn *yaml.Node, sf *fields) (SentExpect, error) {
	se := SentExpect{Line: sn.Line}
	var err error
	if se.Filter, err = p.filter(sf); err != nil {
		return se, err
	}
	names, err := sf.strings("types")
	if err != nil {
		return se, err
	}
	for _, n := range names {
		t := resources.Type(n)
		if !slices.Contains(resources.Types, t) {
			return se, p.errf(sf.keys["types"], "%s: unknown type %q (known: %v)", sf.what, n, resources.Types)
		}
		se.Types = append(se.Types, t)
	}
	return se, nil
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
	if se.Per100, err = sf.str("per_100", false); err != nil {
		return se, err
	}
	if se.Per100 != "" && !se.Delta {
		return se, p.errf(sf.get("per_100"), "%s: per_100 compares two rises over the step: give delta, not value", sf.what)
	}
	return se, nil
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
