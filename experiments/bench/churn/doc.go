// Package churn is the churn axis of `lab bench` (--churn eds|cds): for each N, churn
// mode and series it serves the scaled state to one real Envoy under steady load on
// cluster 0's path, changes cluster 0's endpoints every ChurnEvery (through EDS alone,
// or through a CDS update of the cluster too) and measures the load's latency over
// the churn and Envoy's connection counters (ChurnConfig, bench.json's "churn").
//
// experiments/bench.Run calls Sweep in place of the workload sweep when Options.Churn
// is set, and renders Tables into bench.md; it builds on experiments/bench/benchcore.
package churn
