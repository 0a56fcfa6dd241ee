// Package publish is the cache half of the control plane, kept apart from the transports
// as go-control-plane keeps pkg/cache apart from pkg/server: it holds the state served
// and reaches the library's caches through small interfaces, and knows nothing of gRPC.
//
// A StatePublisher turns a validated resource set into the state a cache serves, with
// the right per-type versions, and records the publish. There is one per cache kind
// (Cache, the --cache value):
//
//   - Publisher (SnapshotCache): one library snapshot per publish, set through
//     SnapshotSetter on the cache NewSnapshotCache builds; VersionStrategy says how the
//     SotW type versions move. SnapshotCacheNoADS is the same cache built without
//     go-control-plane's ADS rule (NewSnapshotCacheNoADS): a SotW request for a subset
//     of a type is answered, at the price of whole-type responses and ordered ADS.
//   - LinearPublisher (LinearCache): a library LinearCache per type behind a MuxCache,
//     each type handed only what changed.
//   - IndexedPublisher (IndexedCache): the workbench's own shared/indexcache.
//
// OnDemandCache wraps either library cache to serve VHDS as on-demand xDS asks. Whoever
// owns the cache builds the one publisher (experiments/controlplane for the CLI, a test
// harness in tests); the transports (shared/frontend, sotw, delta) only serve the cache,
// naming what they send with the publisher's Describe.
package publish
