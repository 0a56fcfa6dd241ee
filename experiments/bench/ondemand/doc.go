// Package ondemand is the on-demand axis of `lab bench` (--on-demand): for each N,
// shape (none, vhds, vhds+cds) and delta series it serves the scaled state to one real
// Envoy that asks for routes and clusters on demand, and measures the initial push and
// Envoy's memory, each cold request (its latency and what the control plane sent
// meanwhile), the requests once warm, and a change of the held services (OnDemandConfig,
// bench.json's "on_demand"). The trace of the recorder's events it reads is its own
// (trace.go).
//
// experiments/bench.Run calls Sweep in place of the workload sweep when
// Options.OnDemand is set, and renders Tables into bench.md; it builds on
// experiments/bench/benchcore.
package ondemand
