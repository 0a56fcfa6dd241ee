// Package clientview checks xds.log against a second, independent model: the xDS
// client's own account of what it holds. xds.log's model of a client (shared/xdslog
// Model) is built from the wire alone: what the server sent, what the client ACKed or
// NACKed, what it subscribed to. The client keeps its own state, written by other
// people from the same protocol: grpc-go reports it through CSDS (FromCSDS), Envoy
// through /config_dump?include_eds (FromEnvoyConfigDump). Check compares the two at a
// step's checkpoint and returns every disagreement as a Finding; the runner records
// them in the step's evidence and, with CI=true, fails the step.
//
// A view is a list of Resource rows, one per resource the client reports, with the
// CSDS ClientResourceStatus names. What must agree, and how versions map between
// xds.log's labels and what each client reports, is Check's documentation.
package clientview

import (
	"fmt"

	"github.com/xds-workbench/lab/shared/resources"
)

// Resource is one resource as a client itself reports it.
type Resource struct {
	Type    string `json:"type"` // resources.Type short name: LDS, RDS, CDS, EDS
	Name    string `json:"name"`
	Version string `json:"version,omitempty"` // the version_info the client reports for it
	// Status is a CSDS ClientResourceStatus name: ACKED, NACKED, DOES_NOT_EXIST,
	// REQUESTED, or UNKNOWN when the client's account does not say.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"` // the client's error for a NACKED one ("" otherwise)
	// RejectedVersion is the version_info of the update a NACKED resource's client
	// rejected (its error_state's), "" when the client does not say.
	RejectedVersion string `json:"rejected_version,omitempty"`
	// Hash is the content hash of the client's copy, as xds.log hashes what it sends
	// (SHA-256 of the resource's bytes); "" when the view does not carry the resource.
	Hash string `json:"hash,omitempty"`
	// PresenceOnly: the client reports the resource but no version or content that can
	// be compared (Envoy's endpoint assignments, rebuilt from its hosts; its route
	// configurations with VHDS, merged with their virtual hosts).
	PresenceOnly bool `json:"presence_only,omitempty"`
	// Warming (Envoy only): Envoy took the resource and has not finished applying it: a
	// cluster waiting for its assignment (Envoy answers the CDS response only then), a
	// listener waiting for its route configuration.
	Warming bool `json:"warming,omitempty"`
}

// Status names (envoy.admin.v3.ClientResourceStatus).
const (
	StatusACKED        = "ACKED"
	StatusNACKED       = "NACKED"
	StatusDoesNotExist = "DOES_NOT_EXIST"
	StatusRequested    = "REQUESTED"
	StatusUnknown      = "UNKNOWN"
)

// Clients whose views Check knows: their version rules differ (Check).
const (
	ClientEnvoy = "envoy"
	ClientGRPC  = "grpc"
)

// Finding is one disagreement between xds.log's model of a client and the client's own
// view: a resource (Name "" when it is about the whole type), what the model says and
// what the client says.
type Finding struct {
	Type   string `json:"type"`
	Name   string `json:"name,omitempty"`
	Model  string `json:"model"`
	Client string `json:"client"`
}

func (f Finding) String() string {
	what := f.Type
	if f.Name != "" {
		what += "/" + f.Name
	}
	return fmt.Sprintf("%s: xds.log says %s; the client says %s", what, f.Model, f.Client)
}

// Published is a published state as Model.Published: type -> name -> content hash (nil
// for a nil set: unknown).
func Published(set *resources.Set) map[string]map[string]string {
	if set == nil {
		return nil
	}
	out := map[string]map[string]string{}
	for t, list := range set.ByType {
		m := make(map[string]string, list.Len())
		for _, x := range list.All() {
			m[x.Name] = x.Hash
		}
		out[string(t)] = m
	}
	return out
}
