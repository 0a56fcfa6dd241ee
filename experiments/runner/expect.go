package runner

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// RequestResult is one request expectation of a step and the answer that settled it.
type RequestResult struct {
	Expected string      `json:"expected"`
	Request  Observation `json:"request"`
	Attempts int         `json:"attempts"`
	Passed   bool        `json:"passed"`
}

// expectFilter keeps the expectations that apply to this run: its mode, cache, client
// and SotW versions, all fixed once the data plane is made.
type expectFilter struct{ target scenario.Target }

// newExpectFilter is the filter of a run with o and info (the SotW options in force,
// defaults filled) whose client is c.
func newExpectFilter(o Options, info RunInfo, c client.Client) expectFilter {
	return expectFilter{scenario.Target{Mode: o.Mode, Cache: string(o.Cache), Client: string(c.Kind()), SotWVersions: info.SotWVersions}}
}

// applies keeps the expectations for this run's mode and cache.
func (x expectFilter) applies(f scenario.Filter) bool { return f.Applies(x.target) }

// firstRequest is the step's first request expectation that applies to this run.
func (x expectFilter) firstRequest(st scenario.Step) (scenario.RequestExpect, bool) {
	for _, q := range st.Expect.Requests {
		if x.applies(q.Filter) {
			return q, true
		}
	}
	return scenario.RequestExpect{}, false
}

// checkRequests sends each expected request until it gets its answer or the deadline.
func (r *Run) checkRequests(ctx context.Context, s *stepRun) {
	for i, q := range s.st.Expect.Requests {
		if !r.expects.applies(q.Filter) {
			continue
		}
		// The first expectation's IDs end in the attempt number (the teaching runs' IDs);
		// each further one has its own prefix, so no two requests share an ID.
		tag := ""
		if i > 0 {
			tag = fmt.Sprintf("q%d-", i+1)
		}
		obs, attempts, err := r.waitDataPlane(ctx, q, xdslog.ProbeRequest, tag)
		s.cp.Requests = append(s.cp.Requests, RequestResult{Expected: describeExpect(q), Request: obs, Attempts: attempts, Passed: err == nil})
		if s.cp.Request == nil {
			s.cp.Request, s.cp.Attempts = &obs, attempts
		}
		s.checkAt(q.Line, describeExpect(q), err == nil, errOr(err, describeObs(obs)))
		if err == nil {
			r.out.say("  data plane: %s after %d request(s)", describeObs(obs), attempts)
		}
	}
}

// observe sends one request through the proxy and records it in xds.log; ok says whether
// it got the expected answer.
func (r *Run) observe(ctx context.Context, q scenario.RequestExpect, tag, probe string) (Observation, bool) {
	obs := r.data.request(ctx, q.Request, fmt.Sprintf("%s-%s-%d-%s", r.o.Mode, r.steps.name, r.host.server(), tag))
	ok := matches(obs, q, r.data.kind() != "simulated")
	if obs.Answered.IsZero() {
		obs.Answered = time.Now().UTC() // connection failures and the simulated client
	}
	r.host.rec().Emit(xdslog.Event{TS: obs.Answered, Event: xdslog.EventDataPlane, RequestID: obs.RequestID, Status: obs.Status, Backend: obs.Backend(),
		Flags: obs.Flags, Upstream: obs.Upstream, Client: clientLabel(obs), Expected: describeExpect(q), Correct: &ok, Path: q.Path, Probe: probe,
		Host: obs.Host, SentTS: sentTS(obs)})
	return obs, ok
}

// waitDataPlane polls with fresh request IDs (tag, then the attempt number) until the
// expected answer or the deadline. Answers that did not match are kept in the step's
// checkpoint (Misses).
func (r *Run) waitDataPlane(ctx context.Context, q scenario.RequestExpect, probe, tag string) (Observation, int, error) {
	var (
		obs      Observation
		attempts int
		pace     pacer
	)
	err := r.wait(ctx, describeExpect(q), func() (bool, error) {
		if !pace.next(ctx) {
			return false, nil // waitFor sees ctx done
		}
		attempts++
		var ok bool
		obs, ok = r.observe(ctx, q, tag+strconv.Itoa(attempts), probe)
		if !ok && r.steps.cur != nil && len(r.steps.cur.cp.Misses) < maxMisses {
			r.steps.cur.cp.Misses = append(r.steps.cur.cp.Misses, obs)
		}
		return ok, nil
	})
	return obs, attempts, err
}

// minAttemptGap is the least time between two attempts of one data-plane expectation.
// waitDataPlane wakes on every xds.log event, its own data-plane events included, so a
// request that keeps failing at once (grpc-go failing an RPC without sending it) would
// otherwise be re-sent thousands of times a second.
const minAttemptGap = 10 * time.Millisecond

// pacer spaces attempts at least minAttemptGap apart.
type pacer struct{ last time.Time }

// next waits until minAttemptGap has passed since the previous attempt; false when ctx
// ended first.
func (p *pacer) next(ctx context.Context) bool {
	if !p.last.IsZero() {
		if d := minAttemptGap - time.Since(p.last); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return false
			}
		}
	}
	p.last = time.Now()
	return true
}

// sentTS is when o was sent, for its dataplane event (nil when it never was).
func sentTS(o Observation) *time.Time {
	if o.Sent.IsZero() {
		return nil
	}
	t := o.Sent
	return &t
}

func clientLabel(o Observation) string {
	switch {
	case o.Simulated:
		return "simulated"
	case o.Client != "":
		return o.Client
	}
	return "envoy"
}

func matches(o Observation, e scenario.RequestExpect, real bool) bool {
	if o.Status != e.Status {
		return false
	}
	if e.Backend != "" {
		if o.Backend() != e.Backend {
			return false
		}
		// With a real proxy, the body and the backend's own log must agree.
		if real && o.BodyBackend != o.LogBackend {
			return false
		}
	}
	return (e.Flags == "" || flagHolds(o, e.Flags)) && tlsHolds(o, e)
}

// tlsHolds checks a TLS request's handshake evidence: the certificate it presented
// (serial, common name) and how it went; a request on the held connection after its
// first must have gone on that same connection (reused), or it proves nothing about
// what a kept-alive connection keeps.
func tlsHolds(o Observation, e scenario.RequestExpect) bool {
	switch {
	case e.CertSerial != "" && o.CertSerial != e.CertSerial,
		e.CertCN != "" && o.CertCN != e.CertCN,
		e.Handshake != "" && o.Handshake != e.Handshake:
		return false
	case e.Held && o.Held > 1 && !o.Reused:
		return false
	case e.ConnClose != nil && o.ConnClose != *e.ConnClose:
		return false
	}
	return true
}

// flagHolds says whether o carries Envoy's response flag. Envoy's answer must carry the
// flag itself. The grpc client has no response flags: a flag stands for its class
// (Classify: NC and NR a config failure, UH and UF an upstream failure), and the grpc
// answer must be of that class (grpcClass reads it from grpc-go's status). So "503 NC"
// means, for grpc, a 503 whose RPC failed because the configuration could not route it.
func flagHolds(o Observation, flag string) bool {
	if o.Client == ClientGRPC {
		return o.Class == Classify(http.StatusServiceUnavailable, flag)
	}
	return o.Flags == flag
}

func describeExpect(e scenario.RequestExpect) string {
	s := strconv.Itoa(e.Status)
	if e.Backend != "" {
		s += " from " + e.Backend
	}
	if e.Flags != "" {
		s += " with flag " + e.Flags
	}
	s += describeTLSExpect(e)
	if !e.TLS && e.Held {
		s += " on the held connection"
	}
	if e.ConnClose != nil {
		s += fmt.Sprintf(", Connection: close %t", *e.ConnClose)
	}
	if e.Path != "" && !strings.HasPrefix(e.Path, "/quote?sku=paper") {
		s = e.Path + ": " + s
	}
	if e.Host != "" {
		s = "Host " + e.Host + " " + s
	}
	if len(e.Headers) > 0 {
		var hs []string
		for k, v := range e.Headers {
			hs = append(hs, k+"="+v)
		}
		s += " (headers " + strings.Join(hs, ",") + ")"
	}
	return s
}

func describeObs(o Observation) string {
	var b strings.Builder
	if o.Status == 0 {
		fmt.Fprintf(&b, "no response (%s)", o.Error)
	} else {
		fmt.Fprintf(&b, "%d", o.Status)
	}
	if be := o.Backend(); be != "" {
		fmt.Fprintf(&b, " from %s", be)
	}
	if o.Flags != "" {
		fmt.Fprintf(&b, " flags %s", o.Flags)
	}
	if o.Upstream != "" {
		fmt.Fprintf(&b, " upstream %s", o.Upstream)
	}
	if o.Class != "" && o.Class != ClassServed && o.Status != 0 {
		fmt.Fprintf(&b, " [%s]", o.Class)
	}
	if o.GRPCStatus != "" && o.GRPCStatus != "OK" {
		fmt.Fprintf(&b, " grpc %s: %s", o.GRPCStatus, o.GRPCMessage)
	}
	b.WriteString(describeTLS(o))
	if !o.TLS && o.Held > 0 {
		fmt.Fprintf(&b, " held conn %s request %d", o.Conn, o.Held)
		if o.Reused {
			b.WriteString(" (reused)")
		}
		if o.ConnClose {
			b.WriteString(" Connection: close")
		}
	}
	if o.Simulated {
		b.WriteString(" (SIMULATED)")
	} else {
		b.WriteString(" (" + clientLabel(o) + ")")
	}
	return b.String()
}

// describeTLSExpect is the TLS part of an expectation's description.
func describeTLSExpect(e scenario.RequestExpect) string {
	if !e.TLS {
		return ""
	}
	s := " over TLS"
	if e.Held {
		s += " on the held connection"
	}
	if e.CertSerial != "" || e.CertCN != "" {
		s += fmt.Sprintf(" with certificate serial %s CN %s", orAny(e.CertSerial), orAny(e.CertCN))
	}
	if e.Handshake != "" {
		s += ", handshake " + e.Handshake
	}
	return s
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}

// describeTLS is the TLS evidence of an answer: the certificate the handshake
// presented, how it went, and the held connection.
func describeTLS(o Observation) string {
	if !o.TLS {
		return ""
	}
	s := " tls handshake " + o.Handshake
	if o.CertSerial != "" {
		s += fmt.Sprintf(" cert serial %s CN %s", o.CertSerial, o.CertCN)
	}
	if o.Held > 0 {
		s += fmt.Sprintf(" held conn %s request %d", o.Conn, o.Held)
		if o.Reused {
			s += " (reused)"
		}
	}
	return s
}

// checkSent waits until the control plane's sends in the step are exactly the expected
// types (xds.log's send events, counted by the tracker), then checks them.
func (r *Run) checkSent(ctx context.Context, s *stepRun) {
	for _, e := range s.st.Expect.Sent {
		if !r.expects.applies(e.Filter) {
			continue
		}
		want := make([]string, len(e.Types))
		for i, t := range e.Types {
			want[i] = string(t)
		}
		slices.Sort(want)
		what := "the control plane sent exactly " + strings.Join(want, ", ")
		var got []string
		err := r.wait(ctx, what, func() (bool, error) {
			got = r.track.sentTypes(s.st.Name)
			return slices.Equal(got, want), nil
		})
		s.checkAt(e.Line, what, err == nil, "sent "+strings.Join(got, ", "))
	}
}

// checkEnvoyStates polls Envoy's config dump until every expected resource state holds.
func (r *Run) checkEnvoyStates(ctx context.Context, s *stepRun) {
	for _, e := range s.st.Expect.Envoy {
		if !r.expects.applies(e.Filter) {
			continue
		}
		key := scenario.Key{Type: e.Type, Name: e.Name}
		what := fmt.Sprintf("Envoy's config dump shows %s %s", key, e.State)
		ev := r.data.admin()
		if ev == nil {
			s.skip(what, r.data.noAdmin("config dump"))
			continue
		}
		var got string
		err := r.wait(ctx, what, func() (bool, error) {
			dump, err := ev.ConfigDump(ctx)
			if err != nil {
				return false, nil
			}
			v := parseConfigDump(dump)
			got = v.describe(key)
			return v.is(key, e.State), nil
		})
		s.checkAt(e.Line, what, err == nil, errOr(err, "it is "+got))
		if err == nil {
			s.cp.EnvoyStates = append(s.cp.EnvoyStates, key.String()+" "+got)
		}
	}
}

// checkStats polls Envoy's stats until every expected stat (or its rise over the step)
// compares as the file says.
func (r *Run) checkStats(ctx context.Context, s *stepRun) {
	for _, e := range s.st.Expect.Stats {
		if !r.expects.applies(e.Filter) {
			continue
		}
		what := fmt.Sprintf("Envoy's %s %s %d", e.Name, e.Op, e.Value)
		switch {
		case e.Per100 != "":
			what = fmt.Sprintf("Envoy's %s rose by %s %d per 100 of %s over the step", e.Name, e.Op, e.Value, e.Per100)
		case e.Delta:
			what = fmt.Sprintf("Envoy's %s rose by %s %d over the step", e.Name, e.Op, e.Value)
		}
		ev := r.data.admin()
		if ev == nil {
			s.skip(what, r.data.noAdmin("stats"))
			continue
		}
		base := int64(0)
		if e.Delta {
			base = int64(atoi(s.prevStats[e.Name]))
		}
		var got int64
		var found bool
		err := r.wait(ctx, what, func() (bool, error) {
			st, err := ev.Stats(ctx)
			if err != nil {
				return false, nil
			}
			v, ok := st[e.Name]
			found = ok
			got = int64(atoi(v)) - base
			if e.Per100 != "" {
				per := int64(atoi(st[e.Per100]) - atoi(s.prevStats[e.Per100]))
				if per <= 0 {
					return false, nil // nothing to count per yet
				}
				got = 100 * got / per
			}
			return e.Holds(got), nil
		})
		detail := fmt.Sprintf("%d", got)
		if !found {
			detail = "Envoy has no such stat"
		}
		s.checkAt(e.Line, what, err == nil, errOr(err, detail))
		if s.cp.StatValues == nil {
			s.cp.StatValues = map[string]int64{}
		}
		s.cp.StatValues[e.Name] = got
	}
}

// checkVersions compares, per resource, the version the newest stream accepted when the
// step began and now (xds.log's view). A version that must move is waited for; one that
// must stay is read once the rest of the step is over.
func (r *Run) checkVersions(ctx context.Context, s *stepRun) {
	for _, e := range s.st.Expect.Versions {
		if !r.expects.applies(e.Filter) {
			continue
		}
		before := s.prevAccepted[string(e.Type)][e.Name].Version
		after := func() string { return r.host.newestAccepted()[string(e.Type)][e.Name].Version }
		verb := "stays"
		if e.Moves {
			verb = "moves"
			_ = r.wait(ctx, "version moves", func() (bool, error) { return after() != before, nil })
		}
		now := after()
		s.checkAt(e.Line, fmt.Sprintf("the accepted version of %s/%s %s", e.Type, e.Name, verb), (now != before) == e.Moves,
			fmt.Sprintf("%q -> %q", before, now))
	}
}
