package runner

import (
	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The run's evidence as it is written: run.json (RunInfo), a checkpoint per step
// (Checkpoint, its checks and what the client and control plane showed), summary.json
// (Summary) and what Execute returns (Result).

// RunInfo is run.json: what was run, with which options.
type RunInfo struct {
	Scenario     string        `json:"scenario,omitempty"`
	ScenarioFile string        `json:"scenario_file,omitempty"`
	Mode         protocol.Mode `json:"mode"`
	Client       string        `json:"client"` // "envoy", "grpc" or "simulated"
	EnvoyPath    string        `json:"envoy_path,omitempty"`
	EnvoyVersion string        `json:"envoy_version,omitempty"`
	EnvoySource  string        `json:"envoy_source,omitempty"`
	SotWVersions string        `json:"sotw_versions,omitempty"`
	NackPolicy   string        `json:"nack_policy,omitempty"`
	Cache        string        `json:"cache,omitempty"`
	Started      string        `json:"started"`
	Steps        []string      `json:"steps"`
	XDSAddr      string        `json:"xds_addr"`
	ListenerPort int           `json:"listener_port"`
	Inventory    []string      `json:"inventory"`
	PID          int           `json:"pid"`
	// NotRunReason says why the data plane was simulated.
	NotRunReason string `json:"not_run_reason,omitempty"`
	// GRPCTarget is what the grpc client dialed (--client grpc).
	GRPCTarget string `json:"grpc_target,omitempty"`
	// Outage and PublishDuringReconnect are the failure windows asked for (Options).
	// ConfigYAML is what was merged over Envoy's bootstrap (--config-yaml).
	ConfigYAML string `json:"config_yaml,omitempty"`
	// DrainTime is Envoy's --drain-time-s when one was given (Options.DrainTime).
	DrainTime              string `json:"drain_time,omitempty"`
	Outage                 string `json:"outage,omitempty"`
	PublishDuringReconnect bool   `json:"publish_during_reconnect,omitempty"`
}

// Check is one expectation and whether it held.
type Check struct {
	What string `json:"what"`
	OK   bool   `json:"ok"`
	// Skipped: the data plane cannot show it (the simulated client has no stats or
	// config dump); never counted as evidence.
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Source is the scenario file and line of the expectation checked.
	Source string `json:"source,omitempty"`
	// Warning: it did not hold, and is recorded without failing the step (a client-view
	// disagreement outside CI; see Options.StrictClientView).
	Warning bool `json:"warning,omitempty"`
}

// Checkpoint is one step's evidence file.
type Checkpoint struct {
	Step        string        `json:"step"`
	Action      string        `json:"action,omitempty"`
	Mode        protocol.Mode `json:"mode"`
	Client      string        `json:"client"`
	Version     string        `json:"version"`
	Proves      string        `json:"proves"`
	StartedAt   string        `json:"started_at"`
	PublishedAt string        `json:"published_at,omitempty"`
	// Request and Attempts are the first request expectation's answer and how many
	// requests it took (convergence); Requests lists every request expectation's.
	Request  *Observation    `json:"request,omitempty"`
	Attempts int             `json:"attempts"`
	Requests []RequestResult `json:"requests,omitempty"`
	// Window is the step's traffic window.
	Window *WindowResult `json:"window,omitempty"`
	// Traffic is the steady load's count for the step (lab run --load).
	Traffic *xdslog.Traffic `json:"traffic,omitempty"`
	// EnvoyStates are the config-dump states the step expected and saw.
	EnvoyStates []string `json:"envoy_states,omitempty"`
	// StatValues are the expected stats (or their rise over the step) as last read.
	StatValues map[string]int64 `json:"stat_values,omitempty"`
	// Burst is a burst publish's figures.
	Burst *Burst `json:"burst,omitempty"`
	// CPU is the CPU time spent during the step.
	CPU *StepCPU `json:"cpu,omitempty"`
	// OutageRequest is the request sent while the control plane was down.
	OutageRequest *Observation `json:"outage_request,omitempty"`
	// Accepted is, per open stream, what the client accepted according to xds.log.
	Accepted []xdslog.StreamStatus `json:"accepted"`
	// EnvoyStats are Envoy's xDS subscription stats (real Envoy only).
	EnvoyStats map[string]string `json:"envoy_stats,omitempty"`
	// EnvoyConfigVersions are the version_info of what Envoy runs, from /config_dump.
	EnvoyConfigVersions map[string]string `json:"envoy_config_versions,omitempty"`
	ConfigDump          string            `json:"config_dump,omitempty"`
	// ClientView is the client's own view checked against xds.log's model of it.
	ClientView *ClientViewResult `json:"client_view,omitempty"`
	// ClientStatus is the file of the client's own CSDS view (the grpc client), or why
	// it could not be read.
	ClientStatus      string `json:"client_status,omitempty"`
	ClientStatusError string `json:"client_status_error,omitempty"`
	NacksInStep       int    `json:"nacks_in_step"`
	NackError         string `json:"nack_error,omitempty"`
	// Exchange lists the step's first requests and sends (reconnect evidence).
	Exchange    []ExchangeEvent `json:"exchange,omitempty"`
	VersionNote string          `json:"version_note,omitempty"`
	// NackRate is the NACKs per second in the step so far (the SotW resend storm's rate),
	// from the first to the last NACK of the step.
	NackRate float64 `json:"nack_rate_per_s,omitempty"`
	// Misses are data-plane requests of the step that did not get the expected answer
	// (the first maxMisses), each classified (upstream vs config failure).
	Misses []Observation `json:"misses,omitempty"`
	// Outage is the evidence of the control-plane outage (control-plane-restart step).
	Outage *Outage `json:"outage,omitempty"`
	// ProxyRestarts counts restarts after the proxy died unexpectedly during the step.
	ProxyRestarts int     `json:"proxy_restarts,omitempty"`
	Checks        []Check `json:"checks"`
	Passed        bool    `json:"passed"`
	DurationMS    float64 `json:"duration_ms"`
}

// Burst is a step's back-to-back publishes.
type Burst struct {
	Publishes  int      `json:"publishes"`
	DurationMS float64  `json:"duration_ms"`
	Versions   []string `json:"versions"`
}

// StepCPU is the CPU time used during a step: the workbench process (control plane,
// recorder, runner and its probes together: they share the process) and Envoy.
type StepCPU struct {
	WorkbenchMS float64  `json:"workbench_ms"`
	EnvoyMS     *float64 `json:"envoy_ms,omitempty"`
}

// Outage is what the proxy did while the control plane was down.
type Outage struct {
	// DurationMS is how long the server was down, from stop to restart.
	DurationMS float64 `json:"duration_ms"`
	// Requests were sent through the proxy during the outage, in order.
	Requests []Observation `json:"requests"`
	// Served counts the requests answered as expected (last known good).
	Served int `json:"served"`
	// ConnectFailures is the rise of Envoy's cluster.xds_cluster.upstream_cx_connect_fail
	// during the outage: reconnect attempts that found no server.
	ConnectFailures int `json:"xds_connect_failures"`
}

// StepResult is one line of the run's outcome.
type StepResult struct {
	Name       string  `json:"name"`
	Checkpoint string  `json:"checkpoint"`
	Passed     bool    `json:"passed"`
	Failure    string  `json:"failure,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	// ClientViewFindings counts the disagreements between the client's own view and
	// xds.log at the step's checkpoint (the checkpoint's client_view lists them).
	ClientViewFindings int `json:"client_view_findings,omitempty"`
}

// Summary is summary.json.
type Summary struct {
	Run     RunInfo           `json:"run"`
	Result  string            `json:"result"`
	Steps   []StepResult      `json:"steps"`
	Figures *analysis.Summary `json:"figures,omitempty"`
}

// Result is what Run returns.
type Result struct {
	Dir     string
	Passed  bool
	Failure string
	// EnvoyResult is the content of envoy.result.
	EnvoyResult string
	Steps       []StepResult
	Figures     *analysis.Summary
}
