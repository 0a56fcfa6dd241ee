package runner

import (
	"context"
	"fmt"
	"os"

	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/session"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// controlPlaneHost owns the run's xDS server across restarts: the session (the control
// plane running now, its recorder and which instance it is), the label book every
// instance shares, the run-long context they live in, xds.log they all write to, and the
// desired state they publish with what its resources take from the run (env). A
// restart-control-plane step restarts the session's control plane here; nothing else
// makes one.
type controlPlaneHost struct {
	ses *session.Session
	// labels are durable across control-plane instances: a restarted server republishes
	// the same state under the same label. So a client resuming with version_info from
	// the old server is matched to the content it holds.
	labels *xdslog.LabelBook
	// life bounds what lives for the whole run (control planes, the load); a step's
	// context would take a restarted server down with the step.
	life context.Context
	log  *os.File // xds.log
	// observe is given every event the recorders write: the run's tracker, after the
	// caller's Options.Observer.
	observe func(xdslog.Event)
	// base is every instance's options but its address and recorder.
	base controlplane.Options
	// desired is the scenario's desired state; env what its resources take from the run.
	desired *scenario.Desired
	env     scenario.Env
}

// newControlPlaneHost is the host of a run of sc with o, its events observed by track.
func newControlPlaneHost(o Options, sc *scenario.Scenario, track *tracker) controlPlaneHost {
	observe := track.observe
	if fn := o.Observer; fn != nil {
		// The caller's first: whatever the run's waiters see, it has seen too.
		observe = func(e xdslog.Event) { fn(e); track.observe(e) }
	}
	return controlPlaneHost{labels: xdslog.NewLabelBook(), observe: observe, desired: scenario.NewDesired(sc),
		base: controlplane.Options{Mode: o.Mode, Versions: o.Versions, NackPolicy: o.NackPolicy, Cache: o.Cache,
			Limits: o.Limits, OnDemand: sc.OnDemand}}
}

// openLog opens xds.log at path, which every instance's recorder appends to.
func (h *controlPlaneHost) openLog(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open xds.log: %w", err)
	}
	h.log = f
	return nil
}

// start starts the run's session on port, its recorder's events labelled with step (the
// step in progress, "" before the first); the session stops backends when it closes.
func (h *controlPlaneHost) start(port int, step string, backends session.Backend) error {
	o := h.base
	o.Addr = loopback.Addr(port)
	ses, err := session.New(session.Options{ControlPlane: o, Log: h.log,
		Record: []xdslog.Option{xdslog.WithObserver(h.observe), xdslog.WithLabelBook(h.labels)}})
	if err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	ses.SetStep(step)
	ses.AddBackend(backends)
	h.ses = ses
	if err := ses.Start(h.life); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	return nil
}

// restart starts the next control-plane instance on the same port, its recorder's events
// labelled with the step in progress.
func (h *controlPlaneHost) restart() error {
	if err := h.ses.RestartControlPlane(); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	return nil
}

// cp is the control plane running now.
func (h *controlPlaneHost) cp() *controlplane.ControlPlane { return h.ses.ControlPlane() }

// rec is the recorder of the control plane running now.
func (h *controlPlaneHost) rec() *xdslog.Recorder { return h.ses.Recorder() }

// server is the instance running, from 1 (xds.log's server field).
func (h *controlPlaneHost) server() int { return h.ses.Server() }

// stop closes the session, if one was made (teardown): its client, then the control
// plane running, then the backends.
func (h *controlPlaneHost) stop(ctx context.Context) {
	if h.ses != nil {
		_ = h.ses.Close(ctx)
	}
}

// closeLog closes xds.log, once nothing writes to it any more (teardown).
func (h *controlPlaneHost) closeLog() {
	if h.log != nil {
		_ = h.log.Close()
	}
}

// publish applies a change to the desired state and publishes it to the current control
// plane; the desired state moves only once the control plane took it. It says nothing:
// the runner's progress lines are its own (a burst says one line for all).
func (h *controlPlaneHost) publish(ctx context.Context, c scenario.Change) (*resources.Set, error) {
	next := h.desired.Clone()
	version, err := next.Apply(c)
	if err != nil {
		return nil, err
	}
	set, err := next.Set(version, h.env)
	if err != nil {
		return nil, fmt.Errorf("publish version %s: %w", version, err)
	}
	if err := h.cp().PublishSet(ctx, set); err != nil {
		return nil, err
	}
	h.desired = next
	return set, nil
}

// newestAccepted is what the newest open stream accepted (nil when none is open).
func (h *controlPlaneHost) newestAccepted() map[string]map[string]xdslog.Accepted {
	var best *xdslog.StreamStatus
	all := h.cp().Recorder().Status()
	for i := range all {
		if best == nil || all[i].Server > best.Server || (all[i].Server == best.Server && all[i].Stream > best.Stream) {
			best = &all[i]
		}
	}
	if best == nil {
		return nil
	}
	return best.Accepted
}

// accepted reports whether some open stream accepted every resource of set (hash, and
// for SotW the type's version label). A rejected type must still hold the previous good
// content.
func (h *controlPlaneHost) accepted(set, prev *resources.Set, rejected map[resources.Type]bool) bool {
	versions := h.cp().Publisher().Versions()
	onDemand := onDemandTypes(h.base.OnDemand)
	for _, s := range h.cp().Recorder().Status() {
		ok := true
		for _, t := range resources.Types {
			if onDemand[t] {
				continue
			}
			want := set
			if rejected[t] {
				if prev == nil {
					continue
				}
				want = prev
			}
			owed := owedResources(want.ByType[t], s.Types[string(t)])
			for _, res := range owed {
				if s.Accepted[string(t)][res.Name].Hash != res.Hash {
					ok = false
				}
			}
			if (t == resources.LDS || t == resources.CDS) && len(s.Accepted[string(t)]) != len(owed) {
				ok = false
			}
			// The type's label, too, under the SnapshotCache: it sends every label it moves.
			// The LinearCache moves a type's label on any change of the type but sends only
			// to clients subscribed to a changed resource (pkg/cache/v3/linear.go), so a
			// label no response carried cannot be ACKed; the hashes above are the test.
			if h.base.Mode == protocol.SotW && h.base.Cache.IsSnapshot() && !rejected[t] && len(owed) > 0 && s.Versions[string(t)] != versions[t] {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// clientModel is xds.log's model of the client of node at this moment: the newest open
// stream that named the node (or has named none yet), with the published state and the
// run's label book. ok is false when no stream is open.
func (h *controlPlaneHost) clientModel(client, node string) (clientview.Model, bool) {
	var best *xdslog.StreamStatus
	all := h.cp().Recorder().Status()
	for i := range all {
		s := &all[i]
		if s.Node != node && s.Node != "" {
			continue
		}
		if best == nil || s.Server > best.Server || (s.Server == best.Server && s.Stream > best.Stream) {
			best = s
		}
	}
	if best == nil {
		return clientview.Model{}, false
	}
	return clientview.Model{Client: client, Mode: h.base.Mode, Stream: *best,
		Published: clientview.Published(h.cp().Publisher().Current()), Labels: h.labels.Lookup}, true
}

// recordProbes writes probes (a traffic window's, or a step's load) as dataplane events:
// a run of equal answers is one event standing for the run (Represents); failures stay
// one event each while there is room. They carry no Expected or Correct: such a probe has
// no answer it must get; the bounds are checked over all of them.
func (h *controlPlaneHost) recordProbes(probes []probe, path, kind string) {
	emitted := 0
	for i := 0; i < len(probes); {
		j := i + 1
		fold := !probes[i].failed() || emitted >= maxProbeEvents
		for fold && j < len(probes) && probes[j].answer() == probes[i].answer() && j-i < 500 {
			j++
		}
		o := probes[i].obs
		e := xdslog.Event{TS: o.Answered, Event: xdslog.EventDataPlane, RequestID: o.RequestID, Status: o.Status, Backend: o.Backend(),
			Flags: o.Flags, Upstream: o.Upstream, Client: clientLabel(o), Path: path, Probe: kind, Host: o.Host, SentTS: sentTS(o)}
		if j-i > 1 {
			e.Represents = j - i
		}
		h.rec().Emit(e)
		emitted++
		i = j
	}
}
