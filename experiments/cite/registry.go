package cite

// The registry: every source a report cites, defined once. Protocol sources quote the
// rule of their section; component sources were read in go-control-plane v0.14.0,
// grpc-go v1.85.0 and Envoy's source at the release the workbench pins (1.40). A new
// finding cites one of these or adds one here, where TestRegistry checks it.

// Protocol: sections of xds_protocol.rst and the rule each states.
var (
	SpecGrouping = Source{Kind: Protocol, Section: "Grouping Resources into Responses",
		Says: "in SotW only LDS and CDS responses must carry every resource of their type; the other types, and every delta response, may carry only what changed"}
	SpecDeleting = Source{Kind: Protocol, Section: "Deleting Resources",
		Says: "SotW: an LDS or CDS name absent from the next response is deleted, and RDS and EDS have no removal but a parent that stops naming them; delta: removed_resources"}
	SpecOverview = Source{Kind: Protocol, Section: "Basic Protocol Overview",
		Says: "the server sends every subscribed resource that changed since the version the client declares, so a client that declares none is sent everything"}
	SpecMoreResponses = Source{Kind: Protocol, Section: "Basic Protocol Overview",
		Says: "the server may send additional responses at any time when the subscribed resources change"}
	SpecNonce = Source{Kind: Protocol, Section: "Basic Protocol Overview",
		Says: "a nonce is valid only on its stream and does not survive a stream restart, so a send in flight when the stream closed is never answered"}
	SpecAckNack = Source{Kind: Protocol, Section: "ACK/NACK and resource type instance version",
		Says: "SotW has one version per type; a NACK carries error_detail and the previous good version"}
	SpecReconnectVersion = Source{Kind: Protocol, Section: "ACK/NACK and resource type instance version",
		Says: "on a new stream the client's first request should carry the most recent version it saw"}
	SpecErrorDetail = Source{Kind: Protocol, Section: "ACK and NACK semantics summary",
		Says: "a NACK is the presence of error_detail, whose text the protocol does not define"}
	SpecNackVersion = Source{Kind: Protocol, Section: "ACK and NACK semantics summary",
		Says: "a NACK's version_info is the most recent version the client is using"}
	SpecWhenToSend = Source{Kind: Protocol, Section: "When to send an update",
		Says: "the server should send only when the resources changed; re-sending the same set causes needless work on client and server"}
	SpecWildcard = Source{Kind: Protocol, Section: "How the client specifies what resources to return",
		Says: "LDS and CDS may be subscribed as a wildcard; other types are requested by name"}
	SpecResourceUpdates = Source{Kind: Protocol, Section: "Resource updates",
		Says: "a server should not answer a request that carries a stale nonce"}
	SpecSotwDoesNotExist = Source{Kind: Protocol, Section: "Knowing When a Requested Resource Does Not Exist",
		Says: "a SotW server cannot say a resource does not exist; the client uses a timeout, 15 s recommended"}
	SpecDeltaDoesNotExist = Source{Kind: Protocol, Section: "Knowing When a Requested Resource Does Not Exist",
		Says: "an incremental server names a subscribed resource that does not exist in removed_resources"}
	SpecVHDSDeltaOnly = Source{Kind: Protocol, Section: "RPC Services and Methods for Each Variant",
		Says: "VirtualHost (VHDS) has no SotW method (\"N/A\"), only VirtualHostDiscoveryService.DeltaVirtualHosts"}
	SpecSotwNames = Source{Kind: Protocol, Section: "Unsubscribing From Resources",
		Says: "in SotW every request carries the full list of names subscribed to, so each ACK repeats them; delta subscribes and unsubscribes by name"}
	SpecVersionScope = Source{Kind: Protocol, Section: "ACK/NACK and resource type instance version",
		Says: "SotW's version_info is the version of the whole type; in the incremental variants it is not used to say which resources are valid, which delta does per resource"}
	SpecReconnect = Source{Kind: Protocol, Section: "Incremental xDS",
		Says: `on reconnect a delta client may list what it holds in initial_resource_versions, one version per resource; a SotW client's first request carries the type's version_info (xDS protocol, "ACK/NACK and resource type instance version")`}
	SpecIncremental = Source{Kind: Protocol, Section: "Incremental xDS",
		Says: "incremental xDS is for scalability of updates first, and lets a client request resources lazily, on demand, second"}
	SpecSecretType = Source{Kind: Protocol, Section: "Resource Types",
		Says: "envoy.extensions.transport_sockets.tls.v3.Secret is one of the v3 resource types"}
	SpecSecretMethods = Source{Kind: Protocol, Section: "RPC Services and Methods for Each Variant",
		Says: "Secret (SDS) has SecretDiscoveryService.StreamSecrets (SotW) and DeltaSecrets (incremental), and rides the aggregated stream like every other type"}
)

// go-control-plane v0.14.0.
var (
	SnapshotUniformAnswer = Source{Kind: GoControlPlane, Who: "go-control-plane SnapshotCache", File: "pkg/cache/v3/simple.go", Func: "respondSOTWWatches",
		Says: "answers every watch whose type's version label moved"}
	SnapshotLabelNotContent = Source{Kind: GoControlPlane, Who: "go-control-plane SnapshotCache", File: "pkg/cache/v3/simple.go", Func: "respondSOTWWatches",
		Says: "compares version labels, not content"}
	SnapshotWholeType = Source{Kind: GoControlPlane, Who: "go-control-plane SnapshotCache", File: "pkg/cache/v3/simple.go", Func: "createResponse",
		Says: "sends every resource of the type, changed or not (its LinearCache sends only the changed RDS/EDS ones)"}
	SnapshotNewStream = Source{Kind: GoControlPlane, Who: "go-control-plane SnapshotCache", File: "pkg/cache/v3/simple.go", Func: "CreateWatch",
		Says: `answers every new stream with everything, though a server may skip what the client has (xDS protocol, "ACK/NACK and resource type instance version")`}
	SnapshotNack = Source{Kind: GoControlPlane, Who: "go-control-plane SnapshotCache", File: "pkg/cache/v3/simple.go", Func: "CreateWatch",
		Says: `answers a NACK's version_info, the previous good version, at once with the current snapshot: the same content again, which xDS protocol, "When to send an update" says a server should not send`}
	DeltaSent = Source{Kind: GoControlPlane, Who: "go-control-plane delta server", File: "pkg/server/delta/v3/server.go", Func: "processDelta",
		Says: "records versions when it sends and never reads error_detail"}
	DeltaInitial = Source{Kind: GoControlPlane, Who: "go-control-plane delta server", File: "pkg/server/delta/v3/server.go", Func: "processDelta",
		Says: "seeds the subscription from initial_resource_versions, and the SnapshotCache (pkg/cache/v3/delta.go, createDeltaResponse) sends only what differs"}
	DeltaVersions = Source{Kind: GoControlPlane, Who: "go-control-plane snapshot cache", File: "pkg/cache/v3/snapshot.go", Func: "ConstructVersionMap",
		Says: "versions a delta resource by the SHA-256 of its bytes"}
	StaleDropped = Source{Kind: GoControlPlane, Who: "go-control-plane SotW server", File: "pkg/server/sotw/v3/ads.go", Func: "processADS",
		Says: `skips a request whose nonce is stale, subscription change and all, where xDS protocol, "Resource updates" only says not to answer it`}
	LinearReturned = Source{Kind: GoControlPlane, Who: "go-control-plane LinearCache", File: "pkg/cache/v3/linear.go", Func: "computeResourceChange",
		Says: "sends a resource whose version differs from the one it returned on the stream, which after a NACK is the rejected one, not what the client runs"}
	LinearNewStream = Source{Kind: GoControlPlane, Who: "go-control-plane LinearCache", File: "pkg/cache/v3/linear.go", Func: "CreateWatch",
		Says: "answers a new stream with every subscribed resource: the SotW server starts each stream's subscription with nothing returned (pkg/server/sotw/v3/ads.go, processADS), and a version_info without the cache's prefix is answered in full"}
	LinearNack = Source{Kind: GoControlPlane, Who: "go-control-plane LinearCache", File: "pkg/cache/v3/linear.go", Func: "computeResourceChange",
		Says: "compares with what it returned on the stream, the rejected response, so a NACK changes nothing and nothing is re-sent until the next publish"}
	LinearSotwVersions = Source{Kind: GoControlPlane, Who: "go-control-plane LinearCache", File: "pkg/cache/v3/linear.go", Func: "getVersion",
		Says: "labels a type's SotW responses with its own counter, moved by each update of that type, behind a prefix per start of the control plane (shared/publish, LinearPublisher)"}
	LinearDeltaVersions = Source{Kind: GoControlPlane, Who: "go-control-plane LinearCache", File: "pkg/cache/v3/cached_resource.go", Func: "getResourceVersion",
		Says: "versions a delta resource by the SHA-256 of its bytes"}
	LinearDeltaInitial = Source{Kind: GoControlPlane, Who: "go-control-plane delta server", File: "pkg/server/delta/v3/server.go", Func: "processDelta",
		Says: "seeds the subscription from initial_resource_versions, and the LinearCache (pkg/cache/v3/linear.go, computeResourceChange) sends only the resources whose hash differs"}
	SnapshotADSSuperset = Source{Kind: GoControlPlane, Who: "go-control-plane SnapshotCache (ads=true)", File: "pkg/cache/v3/simple.go", Func: "respond, superset",
		Says: `never answers a SotW request whose names do not cover every resource of the type in the snapshot (a Secret request for a subset of the snapshot's secrets stalls), where xDS protocol, "How the client specifies what resources to return" says the server must supply the requested resources; the delta path has no such rule`}
	CacheAxis = Source{Kind: GoControlPlane, Who: "go-control-plane v0.14.0", File: "pkg/cache/v3/simple.go and linear.go", Func: "createResponse, respondSOTWWatches; computeResponse",
		Says: "the SnapshotCache answers from the whole snapshot of a type whenever its version moves; the LinearCache from what changed against what it returned on the stream: LDS and CDS in full, RDS and EDS only the changed resources"}
)

// The workbench's own options, caches and front ends.
var (
	UniformLabels = Source{Kind: Workbench, Who: "--sotw-versions uniform", File: "shared/publish", Func: "Publisher.Publish",
		Says: "moves every type's version_info on each publish, and the go-control-plane SnapshotCache (pkg/cache/v3/simple.go, respondSOTWWatches) answers every version change"}
	PerTypeLabels = Source{Kind: Workbench, Who: "--sotw-versions per-type", File: "shared/publish", Func: "Publisher.Publish",
		Says: "moves a type's label when its content changes, counting from labels kept in the server's memory"}
	HoldPolicy = Source{Kind: Workbench, Who: "--nack-policy hold", File: "sotw/sotw.go", Func: "FrontEnd.onRequest",
		Says: "shows the SnapshotCache the rejected version, which parks the watch until the next publish"}
	NackPolicy = Source{Kind: Workbench, Who: "the server's --nack-policy", File: "sotw/sotw.go", Func: "FrontEnd.onRequest",
		Says: `decides whether a NACK is answered at once (resend: the SnapshotCache's CreateWatch sends the same content again, which xDS protocol, "When to send an update" says a server should not) or parked until the next publish (hold)`}
	SnapshotOnlyOptions = Source{Kind: Workbench, Who: "--sotw-versions uniform and --nack-policy resend", File: "experiments/controlplane", Func: "CheckCacheOptions",
		Says: "need the SnapshotCache"}
	OnDemandCache = Source{Kind: Workbench, Who: "the workbench's OnDemandCache", File: "shared/publish", Func: "OnDemandCache",
		Says: "answers a named VHDS subscribe; go-control-plane v0.14.0's delta caches send every virtual host to Envoy's first, wildcard, request and nothing for a name they lack"}
	OnDemandNotFound = Source{Kind: Workbench, Who: "the workbench's OnDemandCache", File: "shared/publish", Func: "OnDemandCache",
		Says: `answers a name it lacks with a bodiless resource aliased to the name, which Envoy's VhdsSubscription matches and resumes the request (404); xDS protocol, "Knowing When a Requested Resource Does Not Exist" asks for removed_resources, on which Envoy's RDS provider does not release a held request`}
	DataPlane = Source{Kind: Workbench, Who: "the runner", File: "experiments/runner/expect.go", Func: "Run.observe",
		Says: "asked each client what it had applied; when a client applies a response is the client's, and the protocol does not say"}
	Unmatched = Source{Kind: Workbench, Who: "the recorder", File: "shared/xdslog/recorder.go", Func: "Recorder",
		Says: "saw the client answer a nonce the server never sent on that stream (recorded as unmatched, never guessed to be an ACK)"}
)

// Envoy (source paths in envoyproxy/envoy).
var (
	EnvoyRateLimit = Source{Kind: Envoy, Who: "Envoy's ads_config.rate_limit_settings", File: "source/extensions/config_subscription/grpc/grpc_stream.h", Func: "checkRateLimitAllowsDrain",
		Says: "would throttle the loop (unset in bootstrap/sotw.yaml)"}
	EnvoyVHDSNack = Source{Kind: Envoy, Who: "Envoy", File: "source/common/router/vhds.cc", Func: "VhdsSubscription::createVhdsSubscription",
		Says: "enforces it: a VHDS config source over ADS is refused unless ads_config is DELTA_GRPC, so the RouteConfiguration is NACKed"}
	EnvoyOnDemand = Source{Kind: Envoy, Who: "Envoy", File: "source/common/router/rds_impl.cc and source/extensions/filters/http/on_demand/on_demand_update.cc", Func: "RdsRouteConfigProviderImpl::requestVirtualHostsUpdate (VhdsSubscription::domainNameToAlias); OnDemandRouteUpdate",
		Says: `subscribes a virtual host as "<route>/<Host>" (a naming set by Envoy's VHDS configuration docs, not the protocol) and clusters through the on_demand filter's odcds, holding the request meanwhile`}
	EnvoySubscription = Source{Kind: Envoy, Who: "Envoy", File: "source/common/listener_manager/lds_api.cc and source/common/upstream/cds_api_impl.cc", Func: "LdsApiImpl, CdsApiImpl",
		Says: "start their subscription with no names (wildcard); RDS and EDS watch the names their listener and clusters use"}
	EnvoyAckNames = Source{Kind: Envoy, Who: "Envoy", File: "source/extensions/config_subscription/grpc/grpc_mux_impl.cc", Func: "GrpcMuxImpl::sendDiscoveryRequest",
		Says: "repeats the watch's names, none for a wildcard watch"}
	EnvoyNackReason = Source{Kind: Envoy, Who: "Envoy", File: "source/extensions/config_subscription/grpc/grpc_mux_impl.cc", Func: "GrpcMuxImpl::onDiscoveryResponse",
		Says: "proto-validates the response before applying it (MessageUtil::validate) and puts the exception text, the resource's text proto first, in error_detail; the legacy mux rejects the whole response"}
	EnvoyNackView = Source{Kind: Envoy, Who: "Envoy", File: "source/common/rds/rds_route_config_subscription.cc", Func: "RdsRouteConfigSubscription::onConfigUpdate",
		Says: "keeps the last good route configuration in its config dump with no error for it; its version_info is the one that last changed the content (a response whose content hash is unchanged is skipped)"}
	EnvoyNackRate = Source{Kind: Envoy, Who: "Envoy", File: "source/extensions/config_subscription/grpc/grpc_mux_impl.cc", Func: "GrpcMuxImpl::onDiscoveryResponse",
		Says: "answers every response; ads_config.rate_limit_settings would throttle it (unset in the workbench's bootstrap)"}
	EnvoyReconnect = Source{Kind: Envoy, Who: "Envoy", File: "source/extensions/config_subscription/grpc/grpc_mux_impl.cc", Func: "GrpcMuxImpl::onStreamEstablished",
		Says: "(the legacy SotW mux: envoy.reloadable_features.unified_mux is off) re-sends each type's request with its last accepted version_info and its watch's names (none for LDS/CDS wildcard)"}
	EnvoyReconnectDelay = Source{Kind: Envoy, Who: "Envoy", File: "source/extensions/config_subscription/grpc/grpc_stream.h", Func: "GrpcStream::onRemoteClose, setRetryTimer",
		Says: "retries with a jittered exponential backoff reset by every response received; when to reconnect is the client's, the protocol does not say"}
	EnvoySDSRotation = Source{Kind: Envoy, Who: "Envoy", File: "source/common/tls/server_ssl_socket.cc", Func: "ServerSslSocketFactory::onAddOrUpdateSecret, createDownstreamTransportSocket",
		Says: "swaps the server context on an SDS update (counting server_ssl_socket_factory.ssl_context_update_by_sds); each socket keeps the context it was built with, so an open connection keeps the old certificate and only new handshakes get the new one"}
	EnvoySDSNotReady = Source{Kind: Envoy, Who: "Envoy", File: "source/common/tls/server_ssl_socket.cc", Func: "ServerSslSocketFactory::createDownstreamTransportSocket",
		Says: "with no SDS certificate, hands out a NotReadySslSocket that closes the connection and counts listener.<scope>.server_ssl_socket_factory.downstream_context_secrets_not_ready"}
	EnvoySDSInitTimeout = Source{Kind: Envoy, Who: "Envoy", File: "source/common/secret/sds_api.cc", Func: "SdsApi::onConfigUpdateFailed",
		Says: "marks the listener's SDS init target ready on the initial_fetch_timeout (15 s by default) or a rejection, never on a dropped stream; until then the listener warms with its port not listened on"}
	EnvoySDSHashSkip = Source{Kind: Envoy, Who: "Envoy", File: "source/common/secret/sds_api.cc", Func: "SdsApi::onConfigUpdate",
		Says: "records secret_hash_ before running the update callbacks, so a re-sent identical secret skips them and is ACKed even though it was NACKed before; the listener keeps presenting the last good certificate"}
	EnvoyDoesNotExist = Source{Kind: Envoy, Who: "Envoy", File: "source/extensions/config_subscription/grpc/grpc_subscription_impl.cc", Func: "GrpcSubscriptionImpl::start",
		Says: "initial_fetch_timeout only ends initialization waiting; a name never answered stays subscribed and its route answers 503 (NC: no cluster)"}
)

// grpc-go v1.85.0 (paths in grpc/grpc-go).
var (
	GRPCSubscription = Source{Kind: GRPCGo, Who: "grpc-go", File: "internal/xds/clients/xdsclient/ads_stream.go", Func: "adsStreamImpl.subscribe",
		Says: "keeps one watch per name, starting from the listener named by the dial target; it never subscribes wildcard"}
	GRPCAckNames = Source{Kind: GRPCGo, Who: "grpc-go", File: "internal/xds/clients/xdsclient/ads_stream.go", Func: "adsStreamImpl.onRecv",
		Says: "ACKs and NACKs with every subscribed name of the type"}
	GRPCNackReason = Source{Kind: GRPCGo, Who: "grpc-go", File: "internal/xds/xdsclient/xdsresource/unmarshal_rds.go", Func: "routesProtoToSlice",
		Says: "validates the decoded resource itself (\"doesn't have a path specifier\") and NACKs, yet applies the response's valid resources (authority.go, handleADSResourceUpdate)"}
	GRPCNackView = Source{Kind: GRPCGo, Who: "grpc-go", File: "internal/xds/clients/xdsclient/authority.go", Func: "authority.handleADSResourceUpdate",
		Says: "CSDS marks the resource NACKED with the rejected version and reason in error_state and keeps the version_info of the last response that carried it valid"}
	GRPCNackRate = Source{Kind: GRPCGo, Who: "grpc-go", File: "internal/xds/clients/xdsclient/ads_stream.go", Func: "adsStreamImpl.onRecv",
		Says: "NACKs each response as soon as it is decoded, with no pause or rate limit"}
	GRPCReconnect = Source{Kind: GRPCGo, Who: "grpc-go", File: "internal/xds/clients/xdsclient/ads_stream.go", Func: "adsStreamImpl.sendExisting",
		Says: "re-sends each type with its last accepted version and every subscribed name"}
	GRPCReconnectDelay = Source{Kind: GRPCGo, Who: "grpc-go", File: "internal/xds/clients/xdsclient/ads_stream.go", Func: "adsStreamImpl.runner",
		Says: "retries with StreamBackoffAfterFailure, by default backoff.DefaultConfig: 1 s base, x1.6, jitter 0.2 (internal/xds/xdsclient/pool.go, backoff/backoff.go)"}
	GRPCNoSDS = Source{Kind: GRPCGo, Who: "grpc-go", File: "internal/xds/xdsclient/xdsresource/unmarshal_cds.go", Func: "securityConfigFromCommonTLSContextUsingNewFields",
		Says: "has no Secret resource type and rejects tls_certificate_sds_secret_configs; its certificates come only from certificate-provider instances"}
	GRPCDoesNotExist = Source{Kind: GRPCGo, Who: "grpc-go", File: "internal/xds/clients/xdsclient/ads_stream.go", Func: "adsStreamImpl.startWatchTimersLocked",
		Says: `reports a watch not answered within defaultWatchExpiryTimeout (xdsclient.go), 15 s (the value xDS protocol, "Knowing When a Requested Resource Does Not Exist" recommends), as does-not-exist; initial_fetch_timeout is not read`}
)

// All is every source of the registry, for the tests that check them.
func All() []Source {
	return []Source{
		SpecGrouping, SpecDeleting, SpecOverview, SpecMoreResponses, SpecNonce, SpecAckNack, SpecReconnectVersion,
		SpecErrorDetail, SpecNackVersion, SpecWhenToSend, SpecWildcard, SpecResourceUpdates, SpecSotwDoesNotExist,
		SpecDeltaDoesNotExist, SpecVHDSDeltaOnly, SpecSotwNames, SpecVersionScope, SpecReconnect, SpecIncremental,
		SpecSecretType, SpecSecretMethods,
		SnapshotUniformAnswer, SnapshotLabelNotContent, SnapshotWholeType, SnapshotNewStream, SnapshotNack, DeltaSent,
		DeltaInitial, DeltaVersions, StaleDropped, LinearReturned, LinearNewStream, LinearNack, LinearSotwVersions,
		LinearDeltaVersions, LinearDeltaInitial, SnapshotADSSuperset, CacheAxis,
		UniformLabels, PerTypeLabels, HoldPolicy, NackPolicy, SnapshotOnlyOptions, OnDemandCache, OnDemandNotFound, DataPlane, Unmatched,
		EnvoyRateLimit, EnvoyVHDSNack, EnvoyOnDemand, EnvoySubscription, EnvoyAckNames, EnvoyNackReason, EnvoyNackView,
		EnvoyNackRate, EnvoyReconnect, EnvoyReconnectDelay, EnvoySDSRotation, EnvoySDSNotReady, EnvoySDSInitTimeout, EnvoySDSHashSkip, EnvoyDoesNotExist,
		GRPCSubscription, GRPCAckNames, GRPCNackReason, GRPCNackView, GRPCNackRate, GRPCReconnect, GRPCReconnectDelay,
		GRPCNoSDS, GRPCDoesNotExist,
	}
}
