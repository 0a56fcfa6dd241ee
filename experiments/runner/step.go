package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xds-workbench/lab/experiments/childproc"
	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/shared/protocol"
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

// Envoy stats the runner reads.
const (
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

// stepRun is the state of the step in progress: its scenario step, where its checks go,
// what was served when it began, and whether the proxy already died in it.
type stepRun struct {
	st    scenario.Step
	cp    *Checkpoint
	check func(what string, ok bool, detail string)
	// checkAt is check for an expectation of the file, naming its file:line.
	checkAt func(line int, what string, ok bool, detail string)
	// fault, once set, is the step's failure: the proxy died again after its restart.
	fault error
	// prev is the set served when the step began; prevStats Envoy's stats then.
	prev      *resources.Set
	prevStats map[string]string
	// prevAccepted is what the newest stream had accepted when the step began.
	prevAccepted map[string]map[string]xdslog.Accepted
	// published lists the labels a restart or a burst published, oldest first, quoted.
	published []string
	// label is the version the step's publish made (a NACK rejects it).
	label string
}

// skip records an expectation the data plane cannot show (the simulated client has no
// stats or config dump): listed, never counted as evidence.
func (s *stepRun) skip(what, why string) {
	s.cp.Checks = append(s.cp.Checks, Check{What: what, OK: true, Skipped: true, Detail: "not checked: " + why})
}

// runStep performs one step and gathers its evidence. It returns the checkpoint (also on
// failure, so the evidence of a failed step is kept) and an error naming the first
// expectation that did not hold.
func (r *Run) runStep(ctx context.Context, st scenario.Step) (*Checkpoint, error) {
	act := actions[st.Action]
	if act == nil {
		return nil, fmt.Errorf("step %s: no handler for action %q", st.Name, st.Action)
	}
	timeout := r.o.StepTimeout + act.budget(r, st) // a held outage or a wait is on purpose
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cp := &Checkpoint{Step: st.Name, Mode: r.o.Mode, Client: r.data.kind(), Proves: st.Proves, Action: string(st.Action),
		StartedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if cur := r.host.cp().Publisher().Current(); cur != nil {
		cp.Version = cur.Version
	}
	var firstErr error
	s := &stepRun{st: st, cp: cp, prev: r.host.cp().Publisher().Current(), prevStats: r.steps.envoyStats, prevAccepted: r.host.newestAccepted()}
	s.checkAt = func(line int, what string, ok bool, detail string) {
		c := Check{What: what, OK: ok, Detail: detail}
		if line > 0 {
			c.Source = fmt.Sprintf("%s:%d", r.sc.File, line)
		}
		cp.Checks = append(cp.Checks, c)
		if !ok && firstErr == nil {
			firstErr = fmt.Errorf("expected %s: %s", what, detail)
			if c.Source != "" {
				firstErr = fmt.Errorf("expected %s (%s): %s", what, c.Source, detail)
			}
		}
	}
	s.check = func(what string, ok bool, detail string) { s.checkAt(0, what, ok, detail) }
	r.steps.cur = s
	defer func() { r.steps.cur = nil }()
	win := r.startWindow(sctx, s)
	cpu := r.data.startCPU()
	began := time.Now()
	finish := func() (*Checkpoint, error) {
		r.dwell(sctx, s, began)
		win.stop(r, s)
		// A failed step ends the run: its count is the load's last.
		cp.Traffic = r.stepTraffic(ctx, s, firstErr != nil || st.Name == r.steps.last)
		cp.CPU = cpu.stop(&r.data)
		r.collect(ctx, s)
		if cp.NacksInStep > 1 {
			r.out.say("  %d NACKs in the step so far, %.0f per second", cp.NacksInStep, cp.NackRate)
		}
		if s.fault != nil {
			// The proxy died twice: that, not the wait it interrupted, is the failure.
			firstErr = s.fault
		}
		cp.Passed = firstErr == nil
		return cp, firstErr
	}

	if err := act.run(sctx, r, s); err != nil {
		win.stop(r, s)
		r.stepTraffic(ctx, nil, true) // the run ends here; its load is counted in xds.log all the same
		return nil, err
	}
	if set := r.host.cp().Publisher().Current(); set != nil {
		cp.Version = set.Version
	}
	if firstErr == nil {
		r.checkProtocol(sctx, s, act)
	}
	if firstErr == nil {
		r.checkRequests(sctx, s)
	}
	if firstErr == nil {
		r.checkEnvoyStates(sctx, s)
		r.checkStats(sctx, s)
		r.checkVersions(sctx, s)
		r.checkSent(sctx, s)
	}
	return finish()
}

// cpuMark is the CPU time used when a step began.
type cpuMark struct {
	self      time.Duration
	envoy     time.Duration
	envoyPID  int
	envoyRead bool
}

// selfCPU is this process's CPU time (user and system); 0 when it cannot be read.
func selfCPU() time.Duration {
	d, err := childproc.SelfCPU()
	if err != nil {
		return 0
	}
	return d
}

// stop gives the step's CPU; Envoy's only when the same process ran the whole step.
func (m cpuMark) stop(d *dataPlane) *StepCPU {
	c := &StepCPU{WorkbenchMS: float64((selfCPU() - m.self).Microseconds()) / 1000}
	if ev := d.admin(); ev != nil && m.envoyRead {
		if d, pid, err := ev.CPU(); err == nil && pid == m.envoyPID {
			ms := float64((d - m.envoy).Microseconds()) / 1000
			c.EnvoyMS = &ms
		}
	}
	return c
}

// checkProtocol confirms from xds.log that the client NACKed what the step expects and
// accepted the rest of the published state, then what the action itself proves.
func (r *Run) checkProtocol(ctx context.Context, s *stepRun, act action) {
	st := s.st
	set := r.host.cp().Publisher().Current()
	rejected := map[resources.Type]bool{}
	for _, n := range st.Expect.Nacks {
		if !r.expects.applies(n.Filter) {
			continue
		}
		rejected[n.Type] = true
		key := st.Name + "/" + string(n.Type)
		err := r.wait(ctx, "NACK", func() (bool, error) { return r.track.nackCount(key) > 0, nil })
		s.checkAt(st.Line, fmt.Sprintf("the client NACKs %s", n.Type), err == nil, errText(err))
		if err == nil {
			r.out.say("  %s NACKed: %s", n.Type, nackReason(r.track.firstNackError(st.Name)))
			r.checkRejected(ctx, s, n.Type)
		}
	}
	if (st.Expect.Accepted == nil || *st.Expect.Accepted) && st.Action != scenario.Wait && set != nil {
		err := r.wait(ctx, "accepted", func() (bool, error) { return r.host.accepted(set, s.prev, rejected), nil })
		s.check("the client accepted the published state", err == nil,
			errOr(err, fmt.Sprintf("version %s on %d open stream(s)", set.Version, len(r.host.cp().Recorder().Status()))))
	}
	act.verify(ctx, r, s)
}

// onDemandTypes are the types Envoy fetches only when traffic needs them: never all of
// the published state, so "accepted" cannot ask for it; the step's requests show them.
func onDemandTypes(o resources.OnDemand) map[resources.Type]bool {
	return map[resources.Type]bool{resources.VHDS: o.VirtualHosts, resources.CDS: o.Clusters, resources.EDS: o.Clusters}
}

// owedResources is what of the published resources of a type a stream must hold: all
// of them when it subscribes by wildcard (Envoy's LDS and CDS) or has not asked for the
// type, else only those its subscription names. A named client narrows its
// subscription as its needs change (grpc-go drops a cluster the route no longer names)
// and owes nothing it stopped asking for: the xDS protocol, "How the client specifies
// what resources to return": an empty list means no interest in the type.
func owedResources(published resources.List, st xdslog.TypeStatus) []resources.Resource {
	if st.Wildcard || st.State == "" {
		return published.Resources()
	}
	var out []resources.Resource
	for _, r := range published.All() {
		if slices.Contains(st.Names, r.Name) {
			out = append(out, r)
		}
	}
	return out
}

// rejectedStat is the Envoy stat prefix of the subscription a NACK of t shows in: the
// type's own counters for LDS and CDS, and for RDS and EDS every route configuration's
// or cluster's counters (any of them may be the rejected one), for SDS every secret's.
func rejectedStats(stats map[string]string, t resources.Type) []string {
	var out []string
	for k := range stats {
		if !strings.HasSuffix(k, ".update_rejected") {
			continue
		}
		p := strings.TrimSuffix(k, "update_rejected")
		switch t {
		case resources.LDS:
			if p == "listener_manager.lds." {
				out = append(out, p)
			}
		case resources.CDS:
			if p == "cluster_manager.cds." {
				out = append(out, p)
			}
		case resources.RDS:
			if strings.HasPrefix(p, "http.") && strings.Contains(p, ".rds.") {
				out = append(out, p)
			}
		case resources.EDS:
			if strings.HasPrefix(p, "cluster.") && p != "cluster_manager.cds." {
				out = append(out, p)
			}
		case resources.SDS:
			// SdsApi's scope is sds.<secret name>. (source/common/secret/sds_api.cc).
			if strings.HasPrefix(p, "sds.") {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkRejected confirms a NACK on Envoy's side: some update_rejected counter of the
// type rose, and that subscription's version_text is not the rejected label (it stays
// where it was, or, under the revert policy, moves to the reverted label).
func (r *Run) checkRejected(ctx context.Context, s *stepRun, t resources.Type) {
	ev := r.data.admin()
	if ev == nil {
		return
	}
	prev := s.prevStats
	var now map[string]string
	var rose string
	err := r.wait(ctx, "update_rejected", func() (bool, error) {
		st, err := ev.Stats(ctx)
		if err != nil {
			return false, nil
		}
		now = st
		for _, p := range rejectedStats(st, t) {
			if atoi(st[p+"update_rejected"]) > atoi(prev[p+"update_rejected"]) {
				rose = p
				return true, nil
			}
		}
		return false, nil
	})
	s.check(fmt.Sprintf("Envoy's %s update_rejected rose", t), err == nil, fmt.Sprintf("%supdate_rejected: %s -> %s", rose, prev[rose+"update_rejected"], now[rose+"update_rejected"]))
	if err == nil {
		s.check(fmt.Sprintf("Envoy's %s version_text is not the rejected version %q", t, s.label), now[rose+"version_text"] != s.label,
			fmt.Sprintf("%q -> %q", prev[rose+"version_text"], now[rose+"version_text"]))
	}
}

// checkResubscribed confirms, from xds.log, that the new stream subscribed again and
// (SotW) ACKed the current version of every type. It waits: "accepted" may already hold
// from what the client said it held when it resumed, before its ACKs on the new stream.
func (r *Run) checkResubscribed(ctx context.Context, s *stepRun) {
	versions := r.host.cp().Publisher().Versions()
	set := r.host.cp().Publisher().Current()
	missing := func(acks bool) []string {
		requested := map[string]bool{}
		acked := map[string]bool{}
		for _, e := range r.track.exchangeOf(s.st.Name) {
			if e.Server != r.host.server() {
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
		var out []string
		for _, t := range resources.Types {
			if set.ByType[t].Len() > 0 && !(acks && acked[string(t)]) && !(!acks && requested[string(t)]) {
				out = append(out, string(t))
			}
		}
		return out
	}
	_ = r.wait(ctx, "resubscribed", func() (bool, error) { return len(missing(false)) == 0, nil })
	m := missing(false)
	s.check("the new stream subscribed to every type", len(m) == 0, "missing: "+strings.Join(m, ","))
	if r.o.Mode == protocol.SotW {
		_ = r.wait(ctx, "ACKed", func() (bool, error) { return len(missing(true)) == 0, nil })
		m = missing(true)
		s.check("the new stream ACKed the current version of every type", len(m) == 0, "missing: "+strings.Join(m, ","))
	}
}

// collect adds the proxy's own view and the accepted table to a checkpoint, and checks
// the proxy's view against xds.log's model of it (clientview.go).
func (r *Run) collect(ctx context.Context, s *stepRun) {
	st, cp := s.st, s.cp
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	cp.Accepted = r.host.cp().Recorder().Status()
	cp.NacksInStep = r.track.nackCount(st.Name)
	cp.NackRate = r.track.nackRate(st.Name)
	cp.NackError = r.track.firstNackError(st.Name)
	cp.Exchange = r.track.exchangeOf(st.Name)
	r.collectClientStatus(ctx, cctx, s)
	ev := r.data.admin()
	if ev == nil {
		return
	}
	if stats, err := ev.Stats(cctx); err == nil {
		r.steps.envoyStats = stats
		cp.EnvoyStats = xdsStats(stats)
	}
	dump, err := ev.ConfigDump(cctx)
	if err != nil {
		dump = nil
	}
	if cv, ok := ev.(clientViewer); ok {
		r.checkClientView(ctx, s, r.data.kind(), nil, false, cv.ClientView)
	} else {
		dump = r.envoyClientView(ctx, s, ev, dump) // the dump the comparison ended on
	}
	if dump != nil {
		name := st.Name + "-config.json"
		if writeFileAtomic(filepath.Join(r.dir, name), dump) == nil {
			cp.ConfigDump = name
		}
		cp.EnvoyConfigVersions = configVersions(dump)
	}
}

// collectClientStatus keeps the client's own view of its resources, when it reports one
// through CSDS (the grpc client), as <step>-csds.json beside the checkpoint, and checks
// it against xds.log's model of the client (clientview.go): each disagreement is a
// failed check of the step (a warning outside CI).
func (r *Run) collectClientStatus(ctx, cctx context.Context, s *stepRun) {
	cv, ok := r.data.client.(client.CSDSViewer)
	if !ok {
		return
	}
	st, cp := s.st, s.cp
	resp, err := cv.ClientStatus(cctx)
	if err == nil {
		err = keepClientStatus(r.dir, st, cp, resp)
	}
	if err != nil {
		cp.ClientStatusError = err.Error()
	}
	var first []clientview.Resource
	if err == nil {
		first, err = clientview.FromCSDS(resp, resources.NodeID)
	}
	fetch := func(ctx context.Context) ([]clientview.Resource, error) {
		resp, err := cv.ClientStatus(ctx)
		if err != nil {
			return nil, err
		}
		return clientview.FromCSDS(resp, resources.NodeID)
	}
	r.checkClientView(ctx, s, clientview.ClientGRPC, first, err == nil, fetch)
}

// keepClientStatus writes the CSDS response as <step>-csds.json in the run directory dir
// and names it in cp.
func keepClientStatus(dir string, st scenario.Step, cp *Checkpoint, resp *statuspb.ClientStatusResponse) error {
	b, err := protojson.MarshalOptions{Multiline: true}.Marshal(resp)
	if err != nil {
		return err
	}
	name := st.Name + "-csds.json"
	if err := writeFileAtomic(filepath.Join(dir, name), append(b, '\n')); err != nil {
		return err
	}
	cp.ClientStatus = name
	return nil
}

// xdsStats keeps Envoy's xDS subscription stats (every listener, route configuration and
// cluster), the cluster manager's warming and active counts, and the control-plane
// connection stats.
func xdsStats(all map[string]string) map[string]string {
	suffixes := []string{"update_attempt", "update_success", "update_failure", "update_rejected", "update_empty",
		"init_fetch_timeout", "version_text", "version"}
	keep := map[string]bool{statConnected: true, statXDSConnectFail: true, statXDSConnects: true,
		"cluster_manager.warming_clusters": true, "cluster_manager.active_clusters": true, "cluster_manager.cluster_modified": true,
		"cluster_manager.cluster_added": true, "cluster_manager.cluster_removed": true,
		"listener_manager.total_listeners_warming": true, "listener_manager.total_listeners_active": true,
		"listener_manager.total_listeners_draining": true, "listener_manager.listener_modified": true,
		"listener_manager.listener_in_place_updated": true, "listener_manager.total_filter_chains_draining": true,
		"control_plane.rate_limit_enforced": true, "control_plane.pending_requests": true}
	out := map[string]string{}
	for k, v := range all {
		if keep[k] {
			out[k] = v
			continue
		}
		if !(strings.HasPrefix(k, "listener_manager.lds.") || strings.HasPrefix(k, "cluster_manager.cds.") ||
			(strings.HasPrefix(k, "http.") && strings.Contains(k, ".rds.")) || strings.HasPrefix(k, "cluster.")) {
			continue
		}
		if strings.HasPrefix(k, "cluster.xds_cluster.") {
			continue
		}
		for _, s := range suffixes {
			if strings.HasSuffix(k, "."+s) {
				out[k] = v
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

// nackReason is xdslog.NackReason: one rule for the console and the runner.
func nackReason(s string) string { return xdslog.NackReason(s) }
