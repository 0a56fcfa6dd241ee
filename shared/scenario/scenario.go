// Package scenario is the workbench's scenario model: the ordered steps that run the
// same way against either protocol, each with the desired state it publishes (or the
// restart it performs) and what the data plane must show afterwards.
package scenario

import (
	"fmt"
	"strings"
)

// Action is what a step does.
type Action string

const (
	// Publish publishes the step's desired state.
	Publish Action = "publish"
	// RestartClient stops the proxy cleanly and starts a new process with the same bootstrap.
	RestartClient Action = "restart-client"
	// RestartControlPlane stops the xDS server while the proxy keeps running, then starts
	// a new server with the same desired state.
	RestartControlPlane Action = "restart-control-plane"
)

// Backend names the inventory backend an endpoint points at.
type Backend string

const (
	V1 Backend = "v1"
	V2 Backend = "v2"
)

// Desired is a step's desired state in scenario terms; the runner maps backends to ports.
type Desired struct {
	Version          string
	Backend          Backend
	InvalidRoute     bool
	InventoryRemoved bool
}

// Expect is what must hold after the step.
type Expect struct {
	// Status is the HTTP status of a request to /quote through the proxy.
	Status int
	// Backend is the backend that must answer (empty when none may answer).
	Backend Backend
	// Flags is the Envoy response flag expected on a failure (e.g. "NC").
	Flags string
	// Rejected names the type the proxy must NACK in this step ("" for none).
	Rejected string
}

// Step is one scenario step.
type Step struct {
	Name       string
	Checkpoint string // checkpoint file name, without .json
	Action     Action
	Desired    Desired // for Publish; for restarts, the state that stays in force
	Expect     Expect
	// Proves says in one line what the checkpoint proves.
	Proves string
}

// Teaching is the scenario of the teaching article, extended with restarts and removal.
func Teaching() []Step {
	v1 := Desired{Version: "1", Backend: V1}
	v2 := Desired{Version: "2", Backend: V2}
	v3 := Desired{Version: "3", Backend: V2, InvalidRoute: true}
	v4 := Desired{Version: "4", Backend: V1}
	return []Step{
		{Name: "initial", Checkpoint: "initial", Action: Publish, Desired: v1,
			Expect: Expect{Status: 200, Backend: V1}, Proves: "version 1 accepted and serving: /quote reaches v1"},
		{Name: "port-change", Checkpoint: "updated", Action: Publish, Desired: v2,
			Expect: Expect{Status: 200, Backend: V2}, Proves: "an EDS change reached traffic: /quote reaches v2"},
		{Name: "invalid-route", Checkpoint: "rejected-keeps-v2", Action: Publish, Desired: v3,
			Expect: Expect{Status: 200, Backend: V2, Rejected: "RDS"}, Proves: "the invalid route was NACKed and the last good config keeps serving v2"},
		{Name: "recover", Checkpoint: "recovered", Action: Publish, Desired: v4,
			Expect: Expect{Status: 200, Backend: V1}, Proves: "a valid version 4 after the NACK is accepted: /quote reaches v1"},
		{Name: "envoy-restart", Checkpoint: "reconnected", Action: RestartClient, Desired: v4,
			Expect: Expect{Status: 200, Backend: V1}, Proves: "a new proxy process subscribes again and ACKs version 4"},
		{Name: "control-plane-restart", Checkpoint: "cp-restarted", Action: RestartControlPlane, Desired: v4,
			Expect: Expect{Status: 200, Backend: V1}, Proves: "the proxy serves last known good during the outage and resyncs with a new server"},
		{Name: "remove-cluster", Checkpoint: "removed", Action: Publish, Desired: Desired{Version: "5", Backend: V1, InventoryRemoved: true},
			Expect: Expect{Status: 503, Flags: "NC"}, Proves: "removing the cluster (route unchanged) gives 503 NC"},
		{Name: "restore", Checkpoint: "restored", Action: Publish, Desired: Desired{Version: "6", Backend: V1},
			Expect: Expect{Status: 200, Backend: V1}, Proves: "the cluster is back: 200 from v1"},
	}
}

// Names lists the step names.
func Names(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Name
	}
	return out
}

// Select keeps the named steps, in scenario order. An empty list keeps all. Unknown
// names are an error that lists the known ones.
func Select(steps []Step, names []string) ([]Step, error) {
	if len(names) == 0 {
		return steps, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []Step
	for _, s := range steps {
		if want[s.Name] {
			out = append(out, s)
			delete(want, s.Name)
		}
	}
	for n := range want {
		return nil, fmt.Errorf("unknown step %q (known: %s)", n, strings.Join(Names(steps), ", "))
	}
	if len(out) == 0 || out[0].Action != Publish {
		return nil, fmt.Errorf("the first selected step must publish a state (start with %q)", steps[0].Name)
	}
	return out, nil
}
