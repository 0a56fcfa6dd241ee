package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

const pollInterval = 50 * time.Millisecond

// Bounds on what a checkpoint keeps.
const (
	maxMisses         = 10
	maxOutageRequests = 200
)

func pollTick() <-chan time.Time { return time.After(pollInterval) }

// Envoy stat names of the teaching resources' subscriptions.
const (
	statRDS       = "http." + resources.StatPrefix + ".rds." + resources.RouteName + "."
	statConnected = "control_plane.connected_state"
	// statXDSConnectFail counts Envoy's failed connection attempts to the control plane,
	// statXDSConnects all of them.
	statXDSConnectFail = "cluster.xds_cluster.upstream_cx_connect_fail"
	statXDSConnects    = "cluster.xds_cluster.upstream_cx_total"
)

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func (r *Run) desired(d scenario.Desired) (resources.State, error) {
	s := resources.State{Version: d.Version, ListenerPort: r.o.ListenerPort, InvalidRoute: d.InvalidRoute, InventoryRemoved: d.InventoryRemoved}
	for _, b := range r.backends.all() {
		if b.Name() == string(d.Backend) {
			s.InventoryPort = b.Port()
		}
	}
	if s.InventoryPort == 0 {
		return s, fmt.Errorf("no backend %q", d.Backend)
	}
	if r.proxy.Kind() == "envoy" {
		abs, err := filepath.Abs(filepath.Join(r.dir, "access.log"))
		if err != nil {
			return s, err
		}
		s.AccessLogPath = abs
	}
	return s, nil
}

// runStep performs one step and gathers its evidence. It returns the checkpoint (also on
// failure, so the evidence of a failed step is kept) and an error naming the first
// expectation that did not hold.
func (r *Run) runStep(ctx context.Context, st scenario.Step, started *bool) (*Checkpoint, error) {
	timeout := r.o.StepTimeout
	if st.Action == scenario.RestartControlPlane {
		timeout += r.o.Outage // the outage is held on purpose; the waits keep their own budget
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cp := &Checkpoint{Step: st.Name, Mode: r.o.Mode, Client: r.proxy.Kind(), Version: st.Desired.Version, Proves: st.Proves,
		StartedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	var firstErr error
	check := func(what string, ok bool, detail string) {
		cp.Checks = append(cp.Checks, Check{What: what, OK: ok, Detail: detail})
		if !ok && firstErr == nil {
			firstErr = fmt.Errorf("expected %s: %s", what, detail)
		}
	}
	r.cur = &stepRun{cp: cp, check: check}
	defer func() { r.cur = nil }()
	finish := func() (*Checkpoint, error) {
		r.collect(ctx, st, cp)
		if cp.NacksInStep > 1 {
			r.say("  %d NACKs in the step so far, %.0f per second", cp.NacksInStep, cp.NackRate)
		}
		if r.cur.fault != nil {
			// The proxy died twice: that, not the wait it interrupted, is the failure.
			firstErr = r.cur.fault
		}
		cp.Passed = firstErr == nil
		return cp, firstErr
	}
	state, err := r.desired(st.Desired)
	if err != nil {
		return nil, err
	}
	prev := r.cp.Publisher().Current()
	prevStats := r.stats

	switch st.Action {
	case scenario.Publish:
		set, err := r.cp.Publish(sctx, state)
		if err != nil {
			return nil, err
		}
		cp.PublishedAt = time.Now().UTC().Format(time.RFC3339Nano)
		r.state = state
		r.say("  published version %s (%s)", set.Version, set.Describe(prev))
		if !*started {
			if err := r.startProxy(sctx); err != nil {
				return nil, err
			}
			*started = true
		}
	case scenario.RestartClient:
		opened, _ := r.track.streams(r.server)
		if err := r.stopProxy(sctx); err != nil {
			return nil, fmt.Errorf("stop %s: %w", r.proxy.Kind(), err)
		}
		err := r.wait(sctx, "old stream closed", func() (bool, error) {
			_, closed := r.track.streams(r.server)
			return closed >= opened, nil
		})
		check("the old stream closed", err == nil, errText(err))
		if err := r.startProxy(sctx); err != nil {
			return nil, err
		}
		r.say("  %s restarted", r.proxy.Kind())
		err = r.wait(sctx, "new stream", func() (bool, error) {
			o, _ := r.track.streams(r.server)
			return o > opened, nil
		})
		check("a new stream opened", err == nil, errText(err))
	case scenario.RestartControlPlane:
		after, err := r.restartControlPlane(sctx, st, state, cp, check)
		if err != nil {
			return nil, err
		}
		st = after
	}

	// Protocol: the client accepted the state (or NACKed the rejected type).
	set := r.cp.Publisher().Current()
	if st.Expect.Rejected != "" {
		key := st.Name + "/" + st.Expect.Rejected
		err := r.wait(sctx, "NACK", func() (bool, error) { return r.track.nackCount(key) > 0, nil })
		check(fmt.Sprintf("the client NACKs %s", st.Expect.Rejected), err == nil, errText(err))
		if err == nil {
			r.say("  %s NACKed: %s", st.Expect.Rejected, nackReason(r.track.firstNackError(st.Name)))
		}
	}
	err = r.wait(sctx, "accepted", func() (bool, error) { return r.accepted(set, prev, st.Expect.Rejected), nil })
	check("the client accepted the published state", err == nil, errOr(err, fmt.Sprintf("version %s on %d open stream(s)", set.Version, len(r.cp.Recorder().Status()))))
	if firstErr != nil {
		return finish()
	}
	if st.Expect.Rejected != "" {
		r.checkRejected(sctx, st, prevStats, check)
	}
	if st.Action == scenario.RestartClient || st.Action == scenario.RestartControlPlane {
		r.checkResubscribed(st, check)
	}
	if st.Action == scenario.RestartControlPlane && r.o.PublishDuringReconnect {
		r.checkNewestOnly(st, prev, set, check)
	}

	// Data plane: poll with fresh request IDs until the expected answer or the deadline.
	obs, attempts, err := r.waitDataPlane(sctx, st)
	cp.Request, cp.Attempts = &obs, attempts
	check(describeExpect(st.Expect), err == nil, errOr(err, describeObs(obs)))
	if err == nil {
		r.say("  data plane: %s after %d request(s)", describeObs(obs), attempts)
	}
	return finish()
}

// accepted reports whether some open stream accepted every resource of set (hash, and
// for SotW the type's version label). The rejected type must still hold the previous
// good content.
func (r *Run) accepted(set, prev *resources.Set, rejected string) bool {
	versions := r.cp.Publisher().Versions()
	for _, s := range r.cp.Recorder().Status() {
		ok := true
		for _, t := range resources.Types {
			want := set
			if string(t) == rejected {
				if prev == nil {
					continue
				}
				want = prev
			}
			for _, res := range want.ByType[t] {
				if s.Accepted[string(t)][res.Name].Hash != res.Hash {
					ok = false
				}
			}
			if (t == resources.LDS || t == resources.CDS) && len(s.Accepted[string(t)]) != len(want.ByType[t]) {
				ok = false
			}
			if r.o.Mode == xdslog.ModeSotW && string(t) != rejected && len(want.ByType[t]) > 0 && s.Versions[string(t)] != versions[t] {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// checkRejected confirms a NACK on Envoy's side: the RDS update_rejected counter rose
// and version_text did not move.
func (r *Run) checkRejected(ctx context.Context, st scenario.Step, prev map[string]string, check func(string, bool, string)) {
	if r.proxy.Kind() != "envoy" || st.Expect.Rejected != "RDS" {
		return
	}
	before, _ := strconv.Atoi(prev[statRDS+"update_rejected"])
	var now map[string]string
	err := r.wait(ctx, "update_rejected", func() (bool, error) {
		s, err := r.proxy.Stats(ctx)
		if err != nil {
			return false, nil
		}
		now = s
		n, _ := strconv.Atoi(s[statRDS+"update_rejected"])
		return n > before, nil
	})
	check("Envoy's RDS update_rejected rose", err == nil, fmt.Sprintf("%s: %d -> %s", statRDS+"update_rejected", before, now[statRDS+"update_rejected"]))
	check("Envoy's RDS version_text did not move", now[statRDS+"version_text"] == prev[statRDS+"version_text"],
		fmt.Sprintf("%q -> %q", prev[statRDS+"version_text"], now[statRDS+"version_text"]))
}

// checkResubscribed confirms, from xds.log, that the new stream subscribed again and ACKed
// the current version of every type.
func (r *Run) checkResubscribed(st scenario.Step, check func(string, bool, string)) {
	versions := r.cp.Publisher().Versions()
	set := r.cp.Publisher().Current()
	requested := map[string]bool{}
	acked := map[string]bool{}
	for _, e := range r.track.exchangeOf(st.Name) {
		if e.Server != r.server {
			continue
		}
		switch e.Event {
		case xdslog.EventRequest:
			requested[e.Type] = true
		case xdslog.EventAck:
			if e.SentVersion == versions[resources.Type(e.Type)] {
				acked[e.Type] = true
			}
		}
	}
	var missing []string
	for _, t := range resources.Types {
		if len(set.ByType[t]) > 0 && !requested[string(t)] {
			missing = append(missing, string(t))
		}
	}
	check("the new stream subscribed to every type", len(missing) == 0, "missing: "+strings.Join(missing, ","))
	if r.o.Mode == xdslog.ModeSotW {
		missing = nil
		for _, t := range resources.Types {
			if len(set.ByType[t]) > 0 && !acked[string(t)] {
				missing = append(missing, string(t))
			}
		}
		check("the new stream ACKed the current version of every type", len(missing) == 0, "missing: "+strings.Join(missing, ","))
	}
}

// restartControlPlane stops the xDS server while the proxy keeps running, checks that the
// proxy serves its last known good configuration during the outage (for Options.Outage,
// with a request every OutageInterval), then starts a new server on the same port. It
// returns the step as it must hold afterwards: with PublishDuringReconnect, the newest
// of two states published while the proxy was disconnected.
func (r *Run) restartControlPlane(ctx context.Context, st scenario.Step, state resources.State, cp *Checkpoint, check func(string, bool, string)) (scenario.Step, error) {
	port := r.cp.Port()
	opened, _ := r.track.streams(r.server)
	envoyRuns := r.proxy.Kind() == "envoy"
	var before map[string]string
	if envoyRuns {
		before, _ = r.proxy.Stats(ctx)
	}
	stopped := time.Now()
	r.cp.Stop()
	err := r.wait(ctx, "streams closed", func() (bool, error) {
		_, closed := r.track.streams(r.server)
		return closed >= opened, nil
	})
	check("the old server's streams closed", err == nil, errText(err))
	r.say("  control plane stopped")
	if envoyRuns {
		err := r.wait(ctx, statConnected+"=0", func() (bool, error) {
			s, err := r.proxy.Stats(ctx)
			return err == nil && s[statConnected] == "0", nil
		})
		check("Envoy saw the control plane go away (connected_state 0)", err == nil, errText(err))
	}
	// The outage: the proxy keeps serving its last known good configuration.
	out, _, err := r.waitDataPlane(ctx, st)
	cp.OutageRequest = &out
	check("during the outage: "+describeExpect(st.Expect), err == nil, errOr(err, describeObs(out)))
	outage := &Outage{}
	cp.Outage = outage
	if r.o.Outage > 0 {
		r.holdOutage(ctx, st, stopped, outage, check)
	}
	if envoyRuns {
		if s, err := r.proxy.Stats(ctx); err == nil {
			outage.ConnectFailures = atoi(s[statXDSConnectFail]) - atoi(before[statXDSConnectFail])
			attempts := atoi(s[statXDSConnects]) - atoi(before[statXDSConnects])
			if r.o.Outage > 0 {
				// Not connected_state: Envoy sets it to 1 as soon as it starts a new stream,
				// before the connection is made (GrpcStream::establishNewStream in
				// source/extensions/config_subscription/grpc/grpc_stream.h), so a reading
				// during a retry shows 1 although nothing answered (a flake `make flake`
				// found). The evidence is the attempts: Envoy retried and every attempt
				// failed, but the one that may be in flight as the stats are read.
				check("Envoy stayed disconnected for the whole outage (every reconnect attempt failed)",
					outage.ConnectFailures > 0 && attempts-outage.ConnectFailures <= 1,
					fmt.Sprintf("%d reconnect attempt(s), %d failed (connected_state %s)", attempts, outage.ConnectFailures, s[statConnected]))
			}
		}
	}
	after := st
	var release func() error
	if r.o.PublishDuringReconnect {
		// Keep the proxy from reconnecting until both states are in place, so that the
		// newest state is the only one it can be offered.
		if release, err = r.proxy.Hold(ctx); err != nil {
			return st, err
		}
		defer func() { _ = release() }()
	}
	if err := r.startControlPlane(port); err != nil {
		return st, err
	}
	outage.DurationMS = float64(time.Since(stopped).Microseconds()) / 1000
	r.setStep(st.Name)
	if !r.o.PublishDuringReconnect {
		// The restarted server republishes the same desired state under the same label:
		// the label belongs to the desired state, not to the server process.
		if _, err := r.cp.Publish(ctx, state); err != nil {
			return st, err
		}
		cp.PublishedAt = time.Now().UTC().Format(time.RFC3339Nano)
		cp.VersionNote = fmt.Sprintf("the restarted server (server %d) republished the same desired state under the same label %q", r.server, state.Version)
		r.say("  control plane restarted (server %d), republished version %s", r.server, state.Version)
	} else {
		inter, newest := state, state
		inter.Version, inter.InventoryRemoved = state.Version+".1", true
		newest.Version = state.Version + ".2"
		for _, b := range r.backends.all() {
			if b.Name() == string(scenario.V2) {
				newest.InventoryPort = b.Port()
			}
		}
		for _, s := range []resources.State{inter, newest} {
			if _, err := r.cp.Publish(ctx, s); err != nil {
				return st, err
			}
		}
		cp.PublishedAt = time.Now().UTC().Format(time.RFC3339Nano)
		r.state = newest
		if err := release(); err != nil {
			return st, err
		}
		cp.Version = newest.Version
		cp.VersionNote = fmt.Sprintf("while the proxy was disconnected the restarted server (server %d) published %q (cluster removed) and then %q (endpoint on v2); the proxy was held until both were in place",
			r.server, inter.Version, newest.Version)
		r.say("  control plane restarted (server %d); published %s then %s while the proxy was disconnected", r.server, inter.Version, newest.Version)
		after.Desired = scenario.Desired{Version: newest.Version, Backend: scenario.V2}
		after.Expect = scenario.Expect{Status: 200, Backend: scenario.V2}
	}
	if envoyRuns {
		err := r.wait(ctx, statConnected+"=1", func() (bool, error) {
			s, err := r.proxy.Stats(ctx)
			return err == nil && s[statConnected] == "1", nil
		})
		check("Envoy reconnected (connected_state 1)", err == nil, errText(err))
	}
	return after, nil
}

// holdOutage keeps the control plane down until Options.Outage has passed since it
// stopped, sending a request every OutageInterval; each must be answered from the last
// known good configuration.
func (r *Run) holdOutage(ctx context.Context, st scenario.Step, stopped time.Time, out *Outage, check func(string, bool, string)) {
	deadline := stopped.Add(r.o.Outage)
	for n := 1; ; n++ {
		obs, ok := r.observe(ctx, st, fmt.Sprintf("outage-%d", n))
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
		t := time.NewTimer(min(wait, r.o.OutageInterval))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	r.say("  outage %s: %d/%d request(s) answered %s", r.o.Outage, out.Served, len(out.Requests), describeExpect(st.Expect))
	check(fmt.Sprintf("for the whole outage (%s) every request was answered %s (last known good)", r.o.Outage, describeExpect(st.Expect)),
		len(out.Requests) > 0 && out.Served == len(out.Requests), fmt.Sprintf("%d of %d", out.Served, len(out.Requests)))
}

// checkNewestOnly confirms from xds.log that a proxy reconnecting after two publishes got
// only the newest state: no send of the intermediate label, every first ACK on the new
// server is of the newest label, and (delta) only resources that differ from what the
// proxy ran were sent.
func (r *Run) checkNewestOnly(st scenario.Step, ran, newest *resources.Set, check func(string, bool, string)) {
	inter := strings.TrimSuffix(newest.Version, ".2") + ".1"
	n := r.track.sentVersionCount(r.server, inter)
	check(fmt.Sprintf("no send on the new server carried the intermediate version %q", inter), n == 0, fmt.Sprintf("%d send(s)", n))
	acks := r.track.firstAcks(r.server)
	var wrong []string
	for t, v := range acks {
		if v != newest.Version {
			wrong = append(wrong, t+"="+v)
		}
	}
	slices.Sort(wrong)
	check(fmt.Sprintf("the first ACK of every type on the new server is of the newest version %q", newest.Version), len(acks) > 0 && len(wrong) == 0,
		fmt.Sprintf("%d type(s) ACKed; other versions: %s", len(acks), strings.Join(wrong, ",")))
	sent := r.track.sentResources(r.server)
	var want []string
	for _, t := range resources.Types {
		old := ran.Hashes(t)
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
	check(what, slices.Equal(sent, want), fmt.Sprintf("sent %v, want %v", sent, want))
}

// observe sends one request through the proxy and records it in xds.log; ok says whether
// it got the step's expected answer.
func (r *Run) observe(ctx context.Context, st scenario.Step, tag string) (Observation, bool) {
	obs := r.proxy.Request(ctx, fmt.Sprintf("%s-%s-%d-%s", r.o.Mode, st.Name, r.server, tag))
	ok := matches(obs, st.Expect, r.proxy.Kind() == "envoy")
	if obs.Answered.IsZero() {
		obs.Answered = time.Now().UTC() // connection failures and the simulated client
	}
	r.rec.Emit(xdslog.Event{TS: obs.Answered, Event: xdslog.EventDataPlane, RequestID: obs.RequestID, Status: obs.Status, Backend: obs.Backend(),
		Flags: obs.Flags, Upstream: obs.Upstream, Client: clientLabel(obs), Expected: describeExpect(st.Expect), Correct: &ok})
	return obs, ok
}

// waitDataPlane polls with fresh request IDs until the expected answer or the deadline.
// Answers that did not match are kept in the step's checkpoint (Misses).
func (r *Run) waitDataPlane(ctx context.Context, st scenario.Step) (Observation, int, error) {
	var (
		obs      Observation
		attempts int
	)
	err := r.wait(ctx, describeExpect(st.Expect), func() (bool, error) {
		attempts++
		var ok bool
		obs, ok = r.observe(ctx, st, strconv.Itoa(attempts))
		if !ok && r.cur != nil && len(r.cur.cp.Misses) < maxMisses {
			r.cur.cp.Misses = append(r.cur.cp.Misses, obs)
		}
		return ok, nil
	})
	return obs, attempts, err
}

func clientLabel(o Observation) string {
	if o.Simulated {
		return "simulated"
	}
	return "envoy"
}

func matches(o Observation, e scenario.Expect, real bool) bool {
	if o.Status != e.Status {
		return false
	}
	if e.Backend != "" {
		if o.Backend() != string(e.Backend) {
			return false
		}
		// With a real proxy, the body and the backend's own log must agree.
		if real && o.BodyBackend != o.LogBackend {
			return false
		}
	}
	if e.Flags != "" && o.Flags != e.Flags {
		return false
	}
	return true
}

func describeExpect(e scenario.Expect) string {
	s := strconv.Itoa(e.Status)
	if e.Backend != "" {
		s += " from " + string(e.Backend)
	}
	if e.Flags != "" {
		s += " with flag " + e.Flags
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
	if o.Simulated {
		b.WriteString(" (SIMULATED)")
	} else {
		b.WriteString(" (envoy)")
	}
	return b.String()
}

// collect adds the proxy's own view and the accepted table to a checkpoint.
func (r *Run) collect(ctx context.Context, st scenario.Step, cp *Checkpoint) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	cp.Accepted = r.cp.Recorder().Status()
	cp.NacksInStep = r.track.nackCount(st.Name)
	cp.NackRate = r.track.nackRate(st.Name)
	cp.NackError = r.track.firstNackError(st.Name)
	cp.Exchange = r.track.exchangeOf(st.Name)
	if r.proxy.Kind() != "envoy" {
		return
	}
	if s, err := r.proxy.Stats(cctx); err == nil {
		r.stats = s
		cp.EnvoyStats = xdsStats(s)
	}
	if dump, err := r.proxy.ConfigDump(cctx); err == nil {
		name := st.Name + "-config.json"
		if writeFileAtomic(filepath.Join(r.dir, name), dump) == nil {
			cp.ConfigDump = name
		}
		cp.EnvoyConfigVersions = configVersions(dump)
	}
}

// xdsStats keeps the subscription stats of the four teaching resources.
func xdsStats(all map[string]string) map[string]string {
	prefixes := []string{"listener_manager.lds.", "cluster_manager.cds.", statRDS, "cluster." + resources.ClusterName + "."}
	suffixes := []string{"update_attempt", "update_success", "update_failure", "update_rejected", "version_text", "version"}
	out := map[string]string{}
	for k, v := range all {
		if k == statConnected || k == statXDSConnectFail || k == statXDSConnects {
			out[k] = v
			continue
		}
		for _, p := range prefixes {
			if !strings.HasPrefix(k, p) {
				continue
			}
			rest := strings.TrimPrefix(k, p)
			for _, s := range suffixes {
				if rest == s {
					out[k] = v
				}
			}
		}
	}
	return out
}

// configVersions extracts version_info per dynamic resource from /config_dump.
func configVersions(dump []byte) map[string]string {
	var doc struct {
		Configs []map[string]json.RawMessage `json:"configs"`
	}
	if json.Unmarshal(dump, &doc) != nil {
		return nil
	}
	out := map[string]string{}
	for _, c := range doc.Configs {
		var typ string
		_ = json.Unmarshal(c["@type"], &typ)
		switch {
		case strings.HasSuffix(typ, "ListenersConfigDump"):
			var ls []struct {
				Name        string `json:"name"`
				ActiveState *struct {
					VersionInfo string `json:"version_info"`
				} `json:"active_state"`
				WarmingState *struct {
					VersionInfo string `json:"version_info"`
				} `json:"warming_state"`
				ErrorState json.RawMessage `json:"error_state"`
			}
			_ = json.Unmarshal(c["dynamic_listeners"], &ls)
			for _, l := range ls {
				if l.ActiveState != nil {
					out["LDS/"+l.Name] = l.ActiveState.VersionInfo
				}
				if l.WarmingState != nil {
					out["LDS/"+l.Name+" (warming)"] = l.WarmingState.VersionInfo
				}
				if len(l.ErrorState) > 0 {
					out["LDS/"+l.Name+" (error)"] = string(l.ErrorState)
				}
			}
		case strings.HasSuffix(typ, "RoutesConfigDump"):
			var rs []struct {
				VersionInfo string `json:"version_info"`
				RouteConfig struct {
					Name string `json:"name"`
				} `json:"route_config"`
			}
			_ = json.Unmarshal(c["dynamic_route_configs"], &rs)
			for _, x := range rs {
				out["RDS/"+x.RouteConfig.Name] = x.VersionInfo
			}
		case strings.HasSuffix(typ, "ClustersConfigDump"):
			var cs []struct {
				VersionInfo string `json:"version_info"`
				Cluster     struct {
					Name string `json:"name"`
				} `json:"cluster"`
			}
			_ = json.Unmarshal(c["dynamic_active_clusters"], &cs)
			for _, x := range cs {
				out["CDS/"+x.Cluster.Name] = x.VersionInfo
			}
		case strings.HasSuffix(typ, "EndpointsConfigDump"):
			var es []struct {
				VersionInfo    string `json:"version_info"`
				EndpointConfig struct {
					ClusterName string `json:"cluster_name"`
					Endpoints   []struct {
						LbEndpoints []struct {
							Endpoint struct {
								Address struct {
									SocketAddress struct {
										PortValue int `json:"port_value"`
									} `json:"socket_address"`
								} `json:"address"`
							} `json:"endpoint"`
						} `json:"lb_endpoints"`
					} `json:"endpoints"`
				} `json:"endpoint_config"`
			}
			_ = json.Unmarshal(c["dynamic_endpoint_configs"], &es)
			for _, x := range es {
				out["EDS/"+x.EndpointConfig.ClusterName] = x.VersionInfo
				for _, le := range x.EndpointConfig.Endpoints {
					for _, lb := range le.LbEndpoints {
						out["EDS/"+x.EndpointConfig.ClusterName+" port"] = strconv.Itoa(lb.Endpoint.Address.SocketAddress.PortValue)
					}
				}
			}
		}
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func errOr(err error, s string) string {
	if err != nil {
		return s + " (" + err.Error() + ")"
	}
	return s
}

// nackReason shortens a NACK message to its reason: Envoy's message embeds the rejected
// resource in text form; the reason is the last "caused by" clause.
func nackReason(s string) string {
	if i := strings.LastIndex(s, "caused by "); i >= 0 {
		s = s[i+len("caused by "):]
	} else if i := strings.LastIndexByte(strings.TrimSpace(s), '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
