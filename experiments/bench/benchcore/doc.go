// Package benchcore is what every benchmark of `lab bench` shares: the Options and
// their validation (the refusals the CLI words as flags, including those of the
// on-demand and churn axes), the series a sweep runs, the sweep environment (Env: the
// Envoy binary, the backends, the progress writer, Env.RunBounded), the data plane a
// configuration starts (real Envoys, the simulated Envoy, fan-out ack-only clients,
// grpc-go client processes: Member, StartClients, StartEnvoy), the recorder-fed meter
// that waits for ACKs, process CPU and memory, and the table cells and statistics the
// reports are drawn with (Block, Format, Stat, Percentiles).
//
// It measures nothing on its own. experiments/bench (the entry point: Run, the workload
// sweep, the fleet, the tap and stuck-client series, Report and its rendering) and the
// axes experiments/bench/ondemand and experiments/bench/churn import it; it imports
// none of them. cmd/lab builds Options and reads the option errors from it.
package benchcore
