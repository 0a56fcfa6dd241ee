// Package protocol holds the protocol tests: both ADS front ends driven by the simulated
// client over in-memory gRPC (bufconn), asserting versions, nonces, redundant pushes,
// NACK handling, reconnects and removals from the recorded xds.log and from what the
// client accepted. It has no non-test code.
package protocol
