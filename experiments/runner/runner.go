// Package runner drives a scenario's steps (shared/scenario: a built-in one or a user's
// file) against one control plane (an experiments/session, across restarts) and one
// client (an experiments/client: real Envoy, grpc-go or the simulated client),
// with one handler per action (actions.go) and one checker per kind of expectation
// (expect.go, window.go), and keeps the evidence: xds.log, a checkpoint per step
// (request, backend, access log, accepted versions, Envoy stats, config dump),
// summary.json, envoy.result and run.exit. Those files are written even when a step fails
// or the run is interrupted.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/shared/certs"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// Client kinds.
const (
	ClientEnvoy = "envoy"
	ClientSim   = "sim"
	ClientAuto  = "auto"
)

// The option names an *option.Error from Execute carries: Options fields in words. The
// runner knows nothing of flags; the CLI maps each name to its flag.
const (
	OptionConfigYAML             = "config yaml"
	OptionClient                 = "client"
	OptionPublishDuringReconnect = "publish during reconnect"
	OptionLoad                   = "load"
)

// Options configure a run. Zero ports pick free ones (tests); the CLI passes the
// documented defaults.
type Options struct {
	// Scenario is what to run (the built-in teaching scenario when nil).
	Scenario   *scenario.Scenario
	Mode       protocol.Mode
	Client     string // envoy, grpc, sim or auto
	Out        string // run directory; default experiments/evidence/<mode>/<UTC time>-<PID>
	Versions   publish.VersionStrategy
	NackPolicy sotw.NackPolicy
	// Cache is the library cache (publish.SnapshotCache when empty).
	Cache    publish.Cache
	EnvoyBin string // --envoy-bin
	// GRPCCommand runs the grpc client (--client grpc); zero: `lab grpc-client` from this
	// executable (grpcclient.LabCommand).
	GRPCCommand grpcclient.Command
	// Load, when its Rate is set, is steady traffic through Envoy for the whole run,
	// counted per step (lab run --load).
	Load Load
	// ConfigYAML is merged over Envoy's bootstrap (after the scenario's own override),
	// e.g. ads_config.rate_limit_settings.
	ConfigYAML string
	// DrainTime is Envoy's drain time (--drain-time-s, whole seconds; lab run
	// --drain-time): 0 takes the scenario's drain_time, else Envoy's own 600 s
	// (envoy.DefaultDrainTime). Negative is refused before anything starts.
	DrainTime time.Duration
	// drainArgs are DrainTime's Envoy arguments, checked once (envoy.DrainTimeArgs).
	drainArgs []string
	Steps     []string

	XDSPort      int
	ListenerPort int
	AdminPort    int
	// InventoryPorts are the ports of the scenario's first two backends (0: free ones);
	// any further backend gets a free port.
	InventoryPorts [2]int
	Limits         controlplane.Limits

	// StrictClientView makes a disagreement between the client's own view (Envoy's
	// config dump) and xds.log's model of it fail the step; without it the disagreement
	// is recorded as a warning. CI=true in the environment sets it too.
	StrictClientView bool

	// StepTimeout bounds each wait (default 45s: a control-plane restart waits for
	// Envoy's jittered reconnect backoff).
	StepTimeout time.Duration
	// Progress receives one line per milestone (nil: discarded). Its write errors are
	// ignored: lost progress (a closed stdout) must not fail the run or lose evidence.
	Progress io.Writer
	// BeforeStep, when set, runs before each step, after its label is set (fault tests
	// use it).
	BeforeStep func(ctx context.Context, r *Run, step scenario.Step) error
	// AfterStep, when set, runs after a step passed and its checkpoint was written,
	// before the next step starts; events meanwhile still carry the step's label (the
	// NACK-storm test holds the storm open here).
	AfterStep func(ctx context.Context, r *Run, step scenario.Step, cp *Checkpoint) error

	// Outage, when set, is how long every restart-control-plane step keeps the xDS server
	// down once the proxy has noticed (connected_state 0), whatever the file says. Meanwhile a request is sent through the
	// proxy every OutageInterval and kept in the checkpoint: each must be answered from
	// the last known good configuration. 0: one request, then restart at once.
	Outage time.Duration
	// OutageInterval spaces the outage requests (default 250ms).
	OutageInterval time.Duration
	// PublishDuringReconnect makes the teaching scenario's control-plane-restart step
	// change the state twice while the proxy is disconnected: the restarted server gets an
	// intermediate state (the cluster removed) and then the newest one (the endpoint on
	// v2) while the proxy is held (Hold) so it cannot reconnect in between. The step then
	// expects the newest state: 200 from v2, and no send of the intermediate label.
	PublishDuringReconnect bool
	// Observer, when set, is given every event the run records, as the recorder writes
	// it (xdslog.WithObserver: under the recorder's lock, so it must be quick and must not
	// call the recorder); lab run --metrics-addr counts them for Prometheus.
	Observer func(xdslog.Event)
}

// Run is one run in progress; BeforeStep hooks get it to inject faults. It drives the
// steps and ties the parts together; each part owns its own state: the control plane
// across restarts (host), the client and its backends (data), where the run stands in
// its steps (steps), the steady load (load). What stays here is the run's own: its
// options and scenario, its directory and run.json, the ports it reserved, and the
// tracker every wait reads.
type Run struct {
	o    Options
	sc   *scenario.Scenario
	dir  string
	info RunInfo // run.json
	// picked are the ports this run reserved (loopback.FreePort), released at teardown.
	picked []int
	track  *tracker
	// host is the control plane (across restarts), xds.log and the desired state.
	host controlPlaneHost
	// data is the client and the backends behind it.
	data dataPlane
	// expects keeps the scenario's expectations that apply to this run.
	expects expectFilter
	// load is the steady traffic and its count (not running without one).
	load steadyLoad
	// steps is the step in progress and the results so far.
	steps stepLog
	// out takes the progress lines.
	out progressLog
}

// Dir returns the run directory.
func (r *Run) Dir() string { return r.dir }

// ControlPlane returns the current control plane.
func (r *Run) ControlPlane() *controlplane.ControlPlane { return r.host.cp() }

// ClientPID is the client's process id (0 for the simulated client).
func (r *Run) ClientPID() int { return r.data.pid() }

// KillClient ends the client with SIGKILL (a real client's process only).
func (r *Run) KillClient() error { return r.data.kill() }

// StopBackend stops one inventory backend ("v1" or "v2") and returns a function that
// starts it again on the same port.
// It is safe to call from another goroutine while a step runs.
func (r *Run) StopBackend(ctx context.Context, name string) (restart func() error, err error) {
	return r.data.stopBackend(ctx, name)
}

// progressLog writes the run's progress lines, each tagged with the mode. A nil writer
// discards them; write errors are ignored (Options.Progress).
type progressLog struct {
	w    io.Writer
	mode protocol.Mode
}

// say writes one progress line.
func (p progressLog) say(format string, args ...any) {
	if p.w != nil {
		fmt.Fprintf(p.w, "[%s] "+format+"\n", append([]any{p.mode}, args...)...)
	}
}

// DefaultOut is the default run directory for mode.
func DefaultOut(mode protocol.Mode) string {
	return filepath.Join("experiments", "evidence", mode.String(), fmt.Sprintf("%s-%d", time.Now().UTC().Format("20060102T150405Z"), os.Getpid()))
}

// Execute runs the scenario. The returned error is non-nil when the run did not pass;
// the Result is always returned with the run directory filled in once it exists.
func Execute(ctx context.Context, o Options) (*Result, error) {
	if err := o.checkProtocol(); err != nil {
		return nil, err
	}
	sc, steps, err := o.resolveScenario()
	if err != nil {
		return nil, err
	}
	for _, p := range []int{o.XDSPort, o.ListenerPort, o.AdminPort, o.InventoryPorts[0], o.InventoryPorts[1]} {
		if p != 0 {
			if err := loopback.ValidatePort(p); err != nil {
				return nil, err
			}
		}
	}
	if o.StepTimeout == 0 {
		o.StepTimeout = 45 * time.Second
	}
	if o.Out == "" {
		o.Out = DefaultOut(o.Mode)
	}
	// Resolve the data plane before creating anything.
	client, bin, notRun, err := o.resolveClient(sc)
	if err != nil {
		return nil, err
	}
	loadNote, err := o.checkDataPlaneOptions(sc, client)
	if err != nil {
		return nil, err
	}
	// Fixed ports are checked before anything is created: a busy port is a one-line
	// error that names it, not a half-made run directory.
	if err := checkPorts(o, client == ClientEnvoy); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	track := newTracker()
	r := &Run{o: o, dir: o.Out, track: track, out: progressLog{w: o.Progress, mode: o.Mode}, host: newControlPlaneHost(o, sc, track),
		data: dataPlane{backends: &backendSet{}}, sc: sc, load: steadyLoad{note: loadNote}}
	r.info = newRunInfo(o, sc, steps, notRun)
	r.describeClient(client, bin, notRun)
	res := &Result{Dir: r.dir}
	runErr := r.execute(ctx, steps, client, bin)
	r.finish(res, runErr, ctx.Err() != nil)
	if runErr != nil {
		return res, runErr
	}
	return res, nil
}

// checkProtocol refuses an unknown mode and the SotW options it or the cache cannot
// honour (controlplane.CheckCacheOptions), and sets o.Cache to the cache parsed.
func (o *Options) checkProtocol() error {
	if err := o.Mode.Check(); err != nil {
		return err
	}
	if err := controlplane.CheckSotWOptions(o.Mode, o.Versions, o.NackPolicy); err != nil {
		return err
	}
	cache, err := publish.ParseCache(string(o.Cache))
	if err != nil {
		return err
	}
	if err := controlplane.CheckCacheOptions(cache, o.Mode, o.Versions, o.NackPolicy); err != nil {
		return err
	}
	o.Cache = cache
	return nil
}

// resolveScenario is the scenario to run (the teaching one when o has none), rewritten for
// PublishDuringReconnect, and the steps selected from it; it refuses a scenario that does
// not apply to the mode and a --config-yaml that does not merge.
func (o *Options) resolveScenario() (*scenario.Scenario, []scenario.Step, error) {
	sc := o.Scenario
	var err error
	if sc == nil {
		if sc, err = scenario.Builtin("teaching"); err != nil {
			return nil, nil, err
		}
	}
	if o.PublishDuringReconnect {
		if sc, err = withPublishDuringReconnect(sc); err != nil {
			return nil, nil, err
		}
	}
	if err := sc.CheckMode(o.Mode); err != nil {
		return nil, nil, err
	}
	steps, err := scenario.Select(sc.Steps, o.Steps)
	if err != nil {
		return nil, nil, err
	}
	if _, err := mergeConfigYAML(sc.Bootstrap, o.ConfigYAML); err != nil {
		return nil, nil, err
	}
	return sc, steps, nil
}

// resolveClient picks the data plane: the client kind run, the Envoy binary when it is
// Envoy, and why the client is simulated when it is (notRun).
func (o *Options) resolveClient(sc *scenario.Scenario) (client string, bin envoy.Binary, notRun string, err error) {
	client = o.Client
	switch o.Client {
	case ClientEnvoy, "":
		client = ClientEnvoy
		if bin, err = envoy.Find(o.EnvoyBin); err != nil {
			return "", bin, "", &option.Error{Option: OptionClient, Value: ClientEnvoy, Err: err}
		}
	case ClientAuto:
		if bin, err = envoy.Find(o.EnvoyBin); err != nil {
			client, notRun, err = ClientSim, err.Error(), nil
		} else {
			client = ClientEnvoy
		}
	case ClientSim:
		notRun = "--client=sim"
	case ClientGRPC:
		if o.GRPCCommand, err = grpcCommand(*o, sc); err != nil {
			return "", bin, "", err
		}
	default:
		return "", bin, "", fmt.Errorf("unknown client %q (want envoy, grpc, sim or auto)", o.Client)
	}
	return client, bin, notRun, nil
}

// checkDataPlaneOptions refuses what the client cannot do (on demand with the simulated
// client, the load's limits) and a negative outage, and fills in the outage interval and
// the scenario's load; it returns why the scenario's load does not run, if it does not.
func (o *Options) checkDataPlaneOptions(sc *scenario.Scenario, client string) (loadNote string, err error) {
	if client == ClientSim && sc.OnDemand.Any() {
		return "", &scenario.NotApplicableError{Scenario: sc.Name, Where: "the simulated client", Reason: errSimOnDemand}
	}
	if client == ClientSim && sc.UsesTLS() {
		return "", &scenario.NotApplicableError{Scenario: sc.Name, Where: "the simulated client", Reason: errSimTLS}
	}
	if client == ClientSim && sc.UsesHeldConn() {
		return "", &scenario.NotApplicableError{Scenario: sc.Name, Where: "the simulated client", Reason: errSimHeld}
	}
	if o.Outage < 0 || o.OutageInterval < 0 {
		return "", fmt.Errorf("outage %s / interval %s: must not be negative", o.Outage, o.OutageInterval)
	}
	if o.OutageInterval == 0 {
		o.OutageInterval = 250 * time.Millisecond
	}
	if o.DrainTime == 0 {
		o.DrainTime = sc.DrainTime
	}
	if o.drainArgs, err = envoy.DrainTimeArgs(o.DrainTime); err != nil {
		return "", err
	}
	if o.Load, loadNote, err = scenarioLoad(o.Load, sc, client == ClientEnvoy); err != nil {
		return "", err
	}
	if err := o.Load.check(client == ClientEnvoy); err != nil {
		return "", err
	}
	return loadNote, nil
}

// newRunInfo is run.json's first content: what is run with which options, the SotW ones
// as the cache does them when they are left unset. The data plane is "simulated" until
// describeClient names it.
func newRunInfo(o Options, sc *scenario.Scenario, steps []scenario.Step, notRun string) RunInfo {
	info := RunInfo{Scenario: sc.Name, ScenarioFile: sc.File, Mode: o.Mode, Client: "simulated", SotWVersions: string(o.Versions), NackPolicy: string(o.NackPolicy),
		Started: time.Now().UTC().Format(time.RFC3339Nano), Steps: scenario.Names(steps), PID: os.Getpid(), NotRunReason: notRun,
		PublishDuringReconnect: o.PublishDuringReconnect}
	if o.Outage > 0 {
		info.Outage = o.Outage.String()
	}
	if o.DrainTime > 0 {
		info.DrainTime = o.DrainTime.String()
	}
	info.Cache = string(o.Cache)
	if o.Mode == protocol.SotW {
		defVersions, defPolicy := controlplane.SotWDefaults(o.Cache)
		if info.SotWVersions == "" {
			info.SotWVersions = string(defVersions)
		}
		if info.NackPolicy == "" {
			info.NackPolicy = string(defPolicy)
		}
	}
	return info
}

func (r *Run) execute(ctx context.Context, steps []scenario.Step, client string, bin envoy.Binary) (err error) {
	defer r.teardown()
	r.host.life = context.WithoutCancel(ctx)
	if err := r.setUp(client, bin); err != nil {
		return err
	}
	if r.load.note != "" {
		r.out.say("  %s", r.load.note)
	}
	r.steps.last = steps[len(steps)-1].Name
	for i, st := range steps {
		if err := r.doStep(ctx, st, i, len(steps)); err != nil {
			return err
		}
	}
	return nil
}

// setUp opens xds.log, reserves the ports left to pick, starts the backends, the control
// plane and the data plane pointed at it, and writes run.json.
func (r *Run) setUp(client string, bin envoy.Binary) error {
	if err := r.host.openLog(filepath.Join(r.dir, "xds.log")); err != nil {
		return err
	}
	backendPorts, err := r.reservePorts()
	if err != nil {
		return err
	}
	if err := r.startBackends(backendPorts); err != nil {
		return err
	}
	if client == ClientEnvoy {
		// Envoy writes the access log the evidence reads (response flags per request).
		if r.host.env.AccessLog, err = filepath.Abs(filepath.Join(r.dir, "access.log")); err != nil {
			return err
		}
	}
	// grpc-go takes the listener as an api_listener: the proxyless shape, same routes.
	r.host.env.Proxyless = client == ClientGRPC
	r.info.ListenerPort = r.o.ListenerPort
	if err := r.host.start(r.o.XDSPort, r.steps.name, r.data.backends); err != nil {
		return err
	}
	r.o.XDSPort = r.host.cp().Port()
	r.info.XDSAddr = r.host.cp().Addr()
	if r.data.client, err = r.newClient(client, bin); err != nil {
		return err
	}
	r.host.ses.AddClient(r.data.client)
	r.expects = newExpectFilter(r.o, r.info, r.data.client)
	return writeJSONAtomic(filepath.Join(r.dir, "run.json"), r.info)
}

// reservePorts turns the zero ports (listener, xDS, backends) into reserved free ones and
// returns the backends' ports, one per scenario backend. Reserved now, not kernel-picked
// at bind time: the listener is bound by Envoy later, and the control plane and backends
// are started again on the same port after a restart or outage, when a kernel-picked
// (ephemeral) port may have become another connection's source port (loopback.FreePort).
func (r *Run) reservePorts() ([]int, error) {
	backendPorts := make([]int, len(r.sc.Backends))
	for i := range backendPorts {
		if i < len(r.o.InventoryPorts) {
			backendPorts[i] = r.o.InventoryPorts[i]
		}
	}
	ports := []*int{&r.o.ListenerPort, &r.o.XDSPort}
	for i := range backendPorts {
		ports = append(ports, &backendPorts[i])
	}
	for _, p := range ports {
		if *p == 0 {
			var err error
			if *p, err = loopback.FreePort(); err != nil {
				return nil, err
			}
			r.picked = append(r.picked, *p)
		}
	}
	return backendPorts, nil
}

// startBackends starts the scenario's backends on ports, each logging into the run
// directory, and makes the run's scenario.Env name them.
func (r *Run) startBackends(ports []int) error {
	ca, err := certs.NewCA("xds-workbench run " + r.sc.Name)
	if err != nil {
		return fmt.Errorf("run CA: %w", err)
	}
	r.host.env = scenario.Env{Backends: map[string]int{}, ListenerPort: r.o.ListenerPort, CA: ca}
	for i, name := range r.sc.Backends {
		bh := r.sc.Behaviours[name]
		b, err := inventory.StartWith(name, ports[i], filepath.Join(r.dir, "inventory-"+name+".log"),
			inventory.Behaviour{Delay: bh.Delay, ConnectionClose: bh.ConnectionClose, IdleTimeout: bh.IdleTimeout, HealthDelay: bh.HealthDelay})
		if err != nil {
			return fmt.Errorf("start inventory %s: %w", name, err)
		}
		r.data.backends.add(b)
		r.host.env.Backends[name] = b.Port()
		r.info.Inventory = append(r.info.Inventory, name+"="+b.Addr())
	}
	return nil
}

// doStep runs step i of n and writes its checkpoint, and records its result; an error
// ends the run (a failed or interrupted step, or a hook's error).
func (r *Run) doStep(ctx context.Context, st scenario.Step, i, n int) error {
	if err := ctx.Err(); err != nil {
		return r.steps.interrupted(st.Name)
	}
	r.setStep(st.Name)
	r.out.say("%s", stepHeader(st, i, n, r.data.kind()))
	if r.o.BeforeStep != nil {
		if err := r.o.BeforeStep(ctx, r, st); err != nil {
			return r.steps.fail(st, fmt.Sprintf("before step: %v", err), 0, 0)
		}
	}
	// An interrupt that lands now belongs to this step. Without this check a step whose
	// conditions already hold would pass despite it (waits test their condition before
	// the context), and the run would stop at the next step only when the machine was
	// fast enough: the flake `make flake` found in TestInterruptedRunWritesResult.
	if ctx.Err() != nil {
		return r.steps.interrupted(st.Name)
	}
	t0 := time.Now()
	cp, err := r.runStep(ctx, st)
	dur := float64(time.Since(t0).Microseconds()) / 1000
	if cp != nil {
		cp.DurationMS = dur
		if werr := writeJSONAtomic(filepath.Join(r.dir, st.Checkpoint+".json"), cp); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return r.steps.interrupted(st.Name)
		}
		return r.steps.fail(st, err.Error(), dur, viewFindings(cp))
	}
	r.steps.passed(st, dur, viewFindings(cp))
	if q, ok := r.expects.firstRequest(st); ok {
		r.steps.lastGood = q
	}
	r.out.say("  %s", passedLine(st, dur, cp))
	return r.afterStep(ctx, st, cp)
}

// afterStep runs the AfterStep hook of a step that passed.
func (r *Run) afterStep(ctx context.Context, st scenario.Step, cp *Checkpoint) error {
	if r.o.AfterStep == nil {
		return nil
	}
	if err := r.o.AfterStep(ctx, r, st, cp); err != nil {
		if ctx.Err() != nil {
			// The step itself passed and is listed; only the run stops here.
			return fmt.Errorf("%w at %s", ErrInterrupted, st.Name)
		}
		return fmt.Errorf("after step %s: %w", st.Name, err)
	}
	return nil
}

// describeClient records the data plane in run.json's info and says which it is.
func (r *Run) describeClient(client string, bin envoy.Binary, notRun string) {
	switch client {
	case ClientEnvoy:
		r.info.Client, r.info.EnvoyPath, r.info.EnvoyVersion, r.info.EnvoySource = "envoy", bin.Path, bin.Version, bin.Source
		r.out.say("envoy: %s (%s, from %s)", bin.Path, bin.VersionLine, bin.Source)
	case ClientGRPC:
		r.info.Client, r.info.GRPCTarget = ClientGRPC, grpcTarget(r.sc)
		r.out.say("grpc client: grpc-go's xDS client, dialing %s", r.info.GRPCTarget)
	default:
		r.out.say("data plane NOT_RUN: using the simulated client (%s)", notRun)
	}
}

// newClient makes the run's client, pointed at the control plane now running.
func (r *Run) newClient(kind string, bin envoy.Binary) (client.Client, error) {
	switch kind {
	case ClientEnvoy:
		overrides, err := mergeConfigYAML(r.sc.Bootstrap, r.o.ConfigYAML)
		if err != nil {
			return nil, err
		}
		r.info.ConfigYAML = overrides
		params := bootstrap.Params{XDSAddr: r.host.cp().Addr(), AdminPort: r.o.AdminPort, OnDemandClusters: r.sc.OnDemand.Clusters}
		// Never a typed nil in the interface: teardown stops any client the run has.
		e, err := newEnvoyClient(bin, r.o.Mode, r.dir, params, r.o.ListenerPort, overrides, r.o.drainArgs, r.host.env.CA)
		if err != nil {
			return nil, err
		}
		r.data.accessLog = filepath.Join(r.dir, "access.log")
		return e, nil
	case ClientGRPC:
		// The front door takes the listener's port: it stands where Envoy's listener would.
		return client.NewGRPC(grpcclient.StartOptions{Command: r.o.GRPCCommand, XDSAddr: r.host.cp().Addr(), NodeID: resources.NodeID,
			Target: r.info.GRPCTarget, LogPath: filepath.Join(r.dir, "grpc-client.log"), FrontDoorPort: r.o.ListenerPort}, nil), nil
	}
	s, err := client.NewSim(client.SimOptions{Mode: r.o.Mode, Addr: r.host.cp().Addr(), BackendAt: r.data.backends.at})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// checkPorts refuses fixed ports that repeat or that are already taken. Envoy's ports
// are checked only when Envoy will run.
func checkPorts(o Options, envoyRuns bool) error {
	type use struct {
		what string
		port int
	}
	uses := []use{{"xDS server", o.XDSPort}, {"inventory v1", o.InventoryPorts[0]}, {"inventory v2", o.InventoryPorts[1]}}
	if envoyRuns {
		uses = append(uses, use{"Envoy listener", o.ListenerPort}, use{"Envoy admin", o.AdminPort})
	}
	seen := map[int]string{}
	for _, u := range uses {
		if u.port == 0 {
			continue
		}
		if other, ok := seen[u.port]; ok {
			return fmt.Errorf("port %d is given twice (%s and %s): every port must differ", u.port, other, u.what)
		}
		seen[u.port] = u.what
		l, err := loopback.Listen(u.port)
		if err != nil {
			return fmt.Errorf("%s port %d is not free: %w", u.what, u.port, err)
		}
		if err := l.Close(); err != nil {
			return fmt.Errorf("%s port %d: close probe: %w", u.what, u.port, err)
		}
	}
	return nil
}

// errSimOnDemand is why an on-demand scenario needs real Envoy.
var errSimOnDemand = errors.New("the simulated client does not model Envoy's on_demand filter (a held request, VHDS and on-demand CDS subscriptions): on-demand scenarios need real Envoy")

// errSimTLS is why a TLS (SDS) scenario needs real Envoy.
var errSimTLS = errors.New("the simulated client has no TLS data plane: it presents no certificate and makes no handshake, so SDS scenarios need real Envoy")

// errSimHeld is why a scenario with a held connection needs real Envoy.
var errSimHeld = errors.New("the simulated client has no connections: a request on the held connection (conn: held) needs real Envoy")

// ErrInterrupted marks a run stopped by its context (SIGINT or SIGTERM).
var ErrInterrupted = errors.New("interrupted")

func (r *Run) setStep(name string) {
	r.steps.name = name
	r.host.ses.SetStep(name)
	r.host.rec().Emit(xdslog.Event{Event: xdslog.EventStep})
}

// teardown stops what the run started, each before what it talks to (the load and the
// client, the control plane, the backends: the session), closes xds.log and releases the ports.
func (r *Run) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r.load.stop()
	r.data.shutdown(ctx)
	r.host.stop(ctx)
	// The session stopped them; these are the backends of a run whose session was never
	// made (Stop is idempotent).
	r.data.stopBackends(ctx)
	r.host.closeLog()
	// Everything that bound or dialled them is stopped now.
	for _, p := range r.picked {
		loopback.Release(p)
	}
}

// finish writes summary.json, envoy.result and run.exit whatever happened.
func (r *Run) finish(res *Result, runErr error, interrupted bool) {
	res.Steps = r.steps.results
	res.Passed = runErr == nil
	result := "PASS"
	if runErr != nil {
		result = "FAIL: " + runErr.Error() // an interruption reads "interrupted at <step>"
	}
	if interrupted && !errors.Is(runErr, ErrInterrupted) && runErr != nil {
		// Stopped by the context outside a step's own handling (a hook, the setup):
		// still report it as an interruption, at the step in progress.
		at := r.steps.name
		if at == "" {
			at = "setup"
		}
		result = fmt.Sprintf("FAIL: interrupted at %s", at)
	}
	if r.info.Client == "simulated" {
		// No real client ran: never report a data-plane result one did not produce.
		if runErr != nil {
			result = "NOT_RUN (simulated client; run " + strings.TrimPrefix(result, "FAIL: ") + ")"
		} else {
			result = "NOT_RUN"
		}
	}
	if runErr != nil {
		res.Failure = runErr.Error()
	}
	res.EnvoyResult = result
	if ev, st, err := xdslog.ReadFile(filepath.Join(r.dir, "xds.log")); err == nil {
		res.Figures = analysis.Summarize(ev)
		res.Figures.Skipped = st.Skipped
	}
	sum := Summary{Run: r.info, Result: result, Steps: r.steps.results, Figures: res.Figures}
	_ = writeJSONAtomic(filepath.Join(r.dir, "summary.json"), sum)
	_ = writeFileAtomic(filepath.Join(r.dir, "envoy.result"), []byte(result+"\n"))
	code := 0
	if runErr != nil {
		code = 1
		if interrupted {
			code = 130
		}
	}
	_ = writeFileAtomic(filepath.Join(r.dir, "run.exit"), []byte(fmt.Sprintf("%d\n", code)))
}

// withPublishDuringReconnect rewrites the teaching scenario's control-plane-restart step
// for Options.PublishDuringReconnect: while Envoy is held, the restarted server publishes
// the cluster removed and then the endpoint on v2; Envoy must end up on the newest only.
func withPublishDuringReconnect(sc *scenario.Scenario) (*scenario.Scenario, error) {
	if sc.Name != "teaching" {
		return nil, &option.Error{Option: OptionPublishDuringReconnect, Err: fmt.Errorf("applies to the teaching scenario; in scenario %q give the restart-control-plane step a publish list with hold_envoy: true", sc.Name)}
	}
	out := *sc
	out.Steps = slices.Clone(sc.Steps)
	for i, st := range out.Steps {
		if st.Action != scenario.RestartControlPlane {
			continue
		}
		st.Changes = []scenario.Change{{Version: "{prev}.1", Delete: []string{"inventory-v1"}}, {Version: "{prev}.2", Upsert: []string{"inventory-v2"}}}
		st.HoldEnvoy = true
		st.Expect.Requests = []scenario.RequestExpect{{Request: scenario.Request{Path: "/quote?sku=paper"}, Status: 200, Backend: "v2"}}
		out.Steps[i] = st
	}
	return &out, nil
}
