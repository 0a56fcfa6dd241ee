package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// action performs one kind of step. The runner wraps every action the same way (the
// traffic window, the protocol checks, the expectations, the checkpoint); an action only
// does its own part.
type action interface {
	// budget is the time the action spends on purpose (a held outage, a wait), added to
	// the step's timeout.
	budget(r *Run, st scenario.Step) time.Duration
	// run performs the action. An error is a failure to act (not an expectation).
	run(ctx context.Context, r *Run, s *stepRun) error
	// verify checks what the action itself proves, after the client accepted the state.
	verify(ctx context.Context, r *Run, s *stepRun)
}

// actions is the one handler per scenario action.
var actions = map[scenario.Action]action{
	scenario.Publish:             publishAction{},
	scenario.RestartEnvoy:        restartEnvoyAction{},
	scenario.KillEnvoy:           restartEnvoyAction{kill: true},
	scenario.RestartControlPlane: restartControlPlaneAction{},
	scenario.Wait:                waitAction{},
}

// publish applies a change to the desired state and publishes it.
func (r *Run) publish(ctx context.Context, c scenario.Change) (*resources.Set, error) {
	prev := r.host.cp.Publisher().Current()
	set, err := r.host.publish(ctx, c)
	if err != nil {
		return nil, err
	}
	r.say("  published version %s (%s)", set.Version, set.Describe(prev))
	return set, nil
}

type publishAction struct{}

func (publishAction) budget(*Run, scenario.Step) time.Duration { return 0 }

func (publishAction) run(ctx context.Context, r *Run, s *stepRun) error {
	if len(s.st.Burst) == 0 {
		set, err := r.publish(ctx, s.st.Change)
		if err != nil {
			return err
		}
		s.label = set.Version
	}
	t0 := time.Now()
	for i, c := range s.st.Burst {
		if i > 0 {
			if err := sleepCtx(ctx, s.st.BurstEvery); err != nil {
				return err
			}
		}
		set, err := r.host.publish(ctx, c)
		if err != nil {
			return err
		}
		s.published = append(s.published, strconv.Quote(set.Version))
		s.label = set.Version
	}
	if n := len(s.st.Burst); n > 0 {
		s.cp.Burst = &Burst{Publishes: n, DurationMS: float64(time.Since(t0).Microseconds()) / 1000, Versions: s.published}
		r.say("  published %d versions in %.1f ms (%s ... %s)", n, s.cp.Burst.DurationMS, s.published[0], s.published[n-1])
	}
	s.cp.PublishedAt = time.Now().UTC().Format(time.RFC3339Nano)
	if !r.data.started {
		// The data plane starts after the first publish, so that its first requests find
		// a state (the order the teaching article uses).
		if err := r.data.start(ctx); err != nil {
			return err
		}
		r.data.started = true
		if err := r.startLoad(); err != nil {
			return err
		}
	}
	return nil
}

func (publishAction) verify(context.Context, *Run, *stepRun) {}

// restartEnvoyAction stops the proxy (cleanly, or with SIGKILL) and starts a new process
// with the same bootstrap.
type restartEnvoyAction struct{ kill bool }

func (restartEnvoyAction) budget(*Run, scenario.Step) time.Duration { return 0 }

func (a restartEnvoyAction) run(ctx context.Context, r *Run, s *stepRun) error {
	opened, _ := r.track.streams(r.host.server)
	if a.kill {
		if err := r.data.crash(ctx); err != nil { // the exit is on purpose
			return err
		}
	} else if err := r.data.stop(ctx); err != nil {
		return fmt.Errorf("stop %s: %w", r.data.proxy.Kind(), err)
	}
	err := r.wait(ctx, "old stream closed", func() (bool, error) {
		_, closed := r.track.streams(r.host.server)
		return closed >= opened, nil
	})
	s.check("the old stream closed", err == nil, errText(err))
	if err := r.data.start(ctx); err != nil {
		return err
	}
	how := "restarted"
	if a.kill {
		how = "killed (SIGKILL) and started again"
	}
	r.say("  %s %s", r.data.proxy.Kind(), how)
	err = r.wait(ctx, "new stream", func() (bool, error) {
		o, _ := r.track.streams(r.host.server)
		return o > opened, nil
	})
	s.check("a new stream opened", err == nil, errText(err))
	return nil
}

func (restartEnvoyAction) verify(ctx context.Context, r *Run, s *stepRun) {
	r.checkResubscribed(ctx, s)
}

// waitAction does nothing for the step's duration; the traffic window keeps probing.
type waitAction struct{}

func (waitAction) budget(_ *Run, st scenario.Step) time.Duration { return st.Duration }

func (waitAction) run(ctx context.Context, r *Run, s *stepRun) error {
	r.say("  waiting %s", s.st.Duration)
	return sleepCtx(ctx, s.st.Duration)
}

func (waitAction) verify(context.Context, *Run, *stepRun) {}

// restartControlPlaneAction stops the xDS server while the proxy keeps running, checks
// that the proxy serves its last known good configuration during the outage (a request
// every OutageInterval for the step's down time), then starts a new server on the same
// port with the same desired state, or with the step's changes published while the
// proxy is held so that the newest is the only state it can be offered.
type restartControlPlaneAction struct{}

func (restartControlPlaneAction) budget(r *Run, st scenario.Step) time.Duration { return r.downFor(st) }

// downFor is how long the server stays down: --outage wins over the file.
func (r *Run) downFor(st scenario.Step) time.Duration {
	if r.o.Outage > 0 {
		return r.o.Outage
	}
	return st.Down
}

func (restartControlPlaneAction) run(ctx context.Context, r *Run, s *stepRun) error {
	cp := s.cp
	port := r.host.cp.Port()
	opened, _ := r.track.streams(r.host.server)
	ev := r.data.proxy.Evidence()
	var before map[string]string
	if ev != nil {
		before, _ = ev.Stats(ctx)
	}
	stopped := time.Now()
	r.stopServer(ctx, s, ev, opened)
	// The outage: the proxy keeps serving its last known good configuration, so it
	// answers as the last step with a request expectation said it must.
	outage := &Outage{}
	cp.Outage = outage
	if err := r.sitOutage(ctx, s, stopped, outage); err != nil {
		return err
	}
	if ev != nil {
		r.checkStayedDisconnected(ctx, s, ev, before, outage)
	}
	if err := r.restartServerHeld(ctx, s, port, stopped); err != nil {
		return err
	}
	if ev != nil {
		err := r.wait(ctx, statConnected+"=1", func() (bool, error) {
			st, err := ev.Stats(ctx)
			return err == nil && st[statConnected] == "1", nil
		})
		s.check("Envoy reconnected (connected_state 1)", err == nil, errText(err))
	}
	return nil
}

// stopServer stops the control plane and checks that its streams closed (as many as
// had opened) and, when the proxy shows its stats (ev), that it saw the server go.
func (r *Run) stopServer(ctx context.Context, s *stepRun, ev evidence, opened int) {
	r.host.cp.Stop()
	err := r.wait(ctx, "streams closed", func() (bool, error) {
		_, closed := r.track.streams(r.host.server)
		return closed >= opened, nil
	})
	s.check("the old server's streams closed", err == nil, errText(err))
	r.say("  control plane stopped")
	if ev != nil {
		err := r.wait(ctx, statConnected+"=0", func() (bool, error) {
			st, err := ev.Stats(ctx)
			return err == nil && st[statConnected] == "0", nil
		})
		s.check("Envoy saw the control plane go away (connected_state 0)", err == nil, errText(err))
	}
}

// sitOutage keeps the server down for the step's down time from stopped, checking that
// the proxy answers from its last known good configuration meanwhile: the request of the
// last step that had one, or this step's first.
func (r *Run) sitOutage(ctx context.Context, s *stepRun, stopped time.Time, outage *Outage) error {
	st := s.st
	req, ok := r.steps.lastGood, r.steps.lastGood.Status != 0
	if !ok {
		req, ok = r.firstRequest(st)
	}
	if !ok {
		if down := r.downFor(st); down > 0 {
			return sleepCtx(ctx, time.Until(stopped.Add(down)))
		}
		return nil
	}
	out, _, err := r.waitDataPlane(ctx, req, xdslog.ProbeOutage, "outage-first-")
	s.cp.OutageRequest = &out
	s.check("during the outage: "+describeExpect(req), err == nil, errOr(err, describeObs(out)))
	if down := r.downFor(st); down > 0 {
		r.holdOutage(ctx, s, req, stopped, down, outage)
	}
	return nil
}

// checkStayedDisconnected counts the proxy's failed reconnects during the outage (from
// the stats read before it) and, when the server stayed down a while, checks that every
// attempt failed.
func (r *Run) checkStayedDisconnected(ctx context.Context, s *stepRun, ev evidence, before map[string]string, outage *Outage) {
	now, err := ev.Stats(ctx)
	if err != nil {
		return
	}
	outage.ConnectFailures = atoi(now[statXDSConnectFail]) - atoi(before[statXDSConnectFail])
	attempts := atoi(now[statXDSConnects]) - atoi(before[statXDSConnects])
	if r.downFor(s.st) <= 0 {
		return
	}
	// Not connected_state: Envoy sets it to 1 as soon as it starts a new stream, before
	// the connection is made (GrpcStream::establishNewStream in
	// source/extensions/config_subscription/grpc/grpc_stream.h), so a reading during a
	// retry shows 1 although nothing answered (a flake `make flake` found). The evidence
	// is the attempts: Envoy retried and every attempt failed, but the one that may be in
	// flight as the stats are read.
	s.check("Envoy stayed disconnected for the whole outage (every reconnect attempt failed)",
		outage.ConnectFailures > 0 && attempts-outage.ConnectFailures <= 1,
		fmt.Sprintf("%d reconnect attempt(s), %d failed (connected_state %s)", attempts, outage.ConnectFailures, now[statConnected]))
}

// restartServerHeld restarts the server (restartServer); with the step's hold_envoy, the
// proxy is kept from reconnecting until every change is in place.
func (r *Run) restartServerHeld(ctx context.Context, s *stepRun, port int, stopped time.Time) error {
	if !s.st.HoldEnvoy {
		return r.restartServer(ctx, s, port, stopped)
	}
	release, err := r.data.proxy.Hold(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = release() }()
	if err := r.restartServer(ctx, s, port, stopped); err != nil {
		return err
	}
	return release()
}

// restartServer starts the new server and publishes to it: the same desired state under
// the same label (the label belongs to the desired state, not to the server process), or
// the step's changes, in order.
func (r *Run) restartServer(ctx context.Context, s *stepRun, port int, stopped time.Time) error {
	set := s.prev
	if err := r.host.start(port, r.steps.name); err != nil {
		return err
	}
	s.cp.Outage.DurationMS = float64(time.Since(stopped).Microseconds()) / 1000
	r.setStep(s.st.Name)
	if len(s.st.Changes) == 0 {
		if set == nil {
			return fmt.Errorf("restart the control plane: nothing was published yet")
		}
		if err := r.host.cp.PublishSet(ctx, set); err != nil {
			return err
		}
		s.cp.PublishedAt = time.Now().UTC().Format(time.RFC3339Nano)
		s.cp.VersionNote = fmt.Sprintf("the restarted server (server %d) republished the same desired state under the same label %q", r.host.server, set.Version)
		r.say("  control plane restarted (server %d), republished version %s", r.host.server, set.Version)
		return nil
	}
	// The new server's first state is already the first change applied: it never serves
	// what the old one served, so a client that reconnects sees only the changed state.
	for _, c := range s.st.Changes {
		next, err := r.publish(ctx, c)
		if err != nil {
			return err
		}
		s.published = append(s.published, strconv.Quote(next.Version))
	}
	s.cp.PublishedAt = time.Now().UTC().Format(time.RFC3339Nano)
	held := ""
	if s.st.HoldEnvoy {
		held = "; the proxy was held until all were in place"
	}
	s.cp.VersionNote = fmt.Sprintf("while the proxy was disconnected the restarted server (server %d) published %s%s",
		r.host.server, strings.Join(s.published, " then "), held)
	r.say("  control plane restarted (server %d); published %s while the proxy was disconnected", r.host.server, strings.Join(s.published, " then "))
	return nil
}

func (restartControlPlaneAction) verify(ctx context.Context, r *Run, s *stepRun) {
	r.checkResubscribed(ctx, s)
	if s.st.HoldEnvoy && len(s.published) > 0 {
		r.checkNewestOnly(s)
	}
}

// holdOutage keeps the control plane down until down has passed since it stopped,
// sending a request every OutageInterval; each must be answered from the last known good
// configuration.
func (r *Run) holdOutage(ctx context.Context, s *stepRun, req scenario.RequestExpect, stopped time.Time, down time.Duration, out *Outage) {
	deadline := stopped.Add(down)
	for n := 1; ; n++ {
		obs, ok := r.observe(ctx, req, fmt.Sprintf("outage-%d", n), xdslog.ProbeOutage)
		if len(out.Requests) < maxOutageRequests {
			out.Requests = append(out.Requests, obs)
		}
		if ok {
			out.Served++
		}
		wait := time.Until(deadline)
		if wait <= 0 || ctx.Err() != nil {
			break
		}
		_ = sleepCtx(ctx, min(wait, r.o.OutageInterval))
	}
	r.say("  outage %s: %d/%d request(s) answered %s", down, out.Served, len(out.Requests), describeExpect(req))
	s.check(fmt.Sprintf("for the whole outage (%s) every request was answered %s (last known good)", down, describeExpect(req)),
		len(out.Requests) > 0 && out.Served == len(out.Requests), fmt.Sprintf("%d of %d", out.Served, len(out.Requests)))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// checkNewestOnly confirms from xds.log that a proxy reconnecting after several publishes
// got only the newest state: no send of an intermediate label, every first ACK on the
// new server is of the newest label, and (delta) only resources that differ from what
// the proxy ran were sent.
func (r *Run) checkNewestOnly(s *stepRun) {
	newest := r.host.cp.Publisher().Current()
	ran := s.prev
	for _, q := range s.published[:len(s.published)-1] {
		inter, _ := strconv.Unquote(q)
		n := r.track.sentVersionCount(r.host.server, inter)
		s.check(fmt.Sprintf("no send on the new server carried the intermediate version %q", inter), n == 0, fmt.Sprintf("%d send(s)", n))
	}
	acks := r.track.firstAcks(r.host.server)
	var wrong []string
	for t, v := range acks {
		if v != newest.Version {
			wrong = append(wrong, t+"="+v)
		}
	}
	slices.Sort(wrong)
	s.check(fmt.Sprintf("the first ACK of every type on the new server is of the newest version %q", newest.Version), len(acks) > 0 && len(wrong) == 0,
		fmt.Sprintf("%d type(s) ACKed; other versions: %s", len(acks), strings.Join(wrong, ",")))
	sent := r.track.sentResources(r.host.server)
	var want []string
	for _, t := range resources.Types {
		var old map[string]string
		if ran != nil {
			old = ran.Hashes(t)
		}
		for _, res := range newest.ByType[t] {
			if r.o.Mode == xdslog.ModeSotW || old[res.Name] != res.Hash {
				want = append(want, string(t)+"/"+res.Name)
			}
		}
	}
	slices.Sort(want)
	what := "the new server sent exactly the resources that differ from what the proxy ran"
	if r.o.Mode == xdslog.ModeSotW {
		what = "the new SotW server sent the whole newest state (every type, once)"
	}
	s.check(what, slices.Equal(sent, want), fmt.Sprintf("sent %v, want %v", sent, want))
}
