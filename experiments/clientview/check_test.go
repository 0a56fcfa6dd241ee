package clientview

import (
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The resources of the tests: what grpc-go subscribes to for xds:///quote.
var (
	lds1     = res{"LDS", "quote", hash('1')}
	rds1     = res{"RDS", "quote-route", hash('2')}
	rdsBad   = res{"RDS", "quote-route", hash('b')}
	cds1     = res{"CDS", "inventory", hash('3')}
	eds1     = res{"EDS", "inventory", hash('4')}
	eds2     = res{"EDS", "inventory", hash('5')}
	ghostCDS = res{"CDS", "ghost", hash('6')}
)

// grpcSynced is a grpc-go client that subscribed by name to the four types and ACKed
// version 1 of each.
func grpcSynced(t *testing.T) *wire {
	w := newWire(t, protocol.SotW)
	w.publish("1", lds1, rds1, cds1, eds1)
	for _, r := range []res{lds1, rds1, cds1, eds1} {
		w.subscribe(r.typ, r.name)
		w.sendAck(r.typ, "1", r)
	}
	return w
}

// csdsRow is one generic_xds_config as grpc-go's authority.resourceConfig fills it.
func csdsRow(typ, name, version string, status adminv3.ClientResourceStatus) *statuspb.ClientConfig_GenericXdsConfig {
	return &statuspb.ClientConfig_GenericXdsConfig{TypeUrl: resources.Type(typ).URL(), Name: name, VersionInfo: version, ClientStatus: status}
}

func nackedRow(typ, name, kept, rejected, details string) *statuspb.ClientConfig_GenericXdsConfig {
	g := csdsRow(typ, name, kept, adminv3.ClientResourceStatus_NACKED)
	g.ErrorState = &adminv3.UpdateFailureState{Details: details, VersionInfo: rejected}
	return g
}

func acked(r res, version string) *statuspb.ClientConfig_GenericXdsConfig {
	return csdsRow(r.typ, r.name, version, adminv3.ClientResourceStatus_ACKED)
}

// grpcView reads a CSDS answer of the test's node through FromCSDS.
func grpcView(t *testing.T, rows ...*statuspb.ClientConfig_GenericXdsConfig) []Resource {
	t.Helper()
	resp := &statuspb.ClientStatusResponse{Config: []*statuspb.ClientConfig{{
		Node: &corev3.Node{Id: node}, ClientScope: "xds:///quote", GenericXdsConfigs: rows}}}
	v, err := FromCSDS(resp, node)
	require.NoError(t, err)
	return v
}

// one asserts a single finding about typ/name.
func one(t *testing.T, got []Finding, typ, name string) Finding {
	t.Helper()
	require.Len(t, got, 1, "%v", got)
	assert.Equal(t, typ, got[0].Type)
	assert.Equal(t, name, got[0].Name)
	return got[0]
}

func TestGRPCAckedViewAgrees(t *testing.T) {
	w := grpcSynced(t)
	view := grpcView(t, acked(lds1, "1"), acked(rds1, "1"), acked(cds1, "1"), acked(eds1, "1"))
	assert.Empty(t, Check(w.model(ClientGRPC), view))

	// grpc-go takes every valid response's version_info, changed content or not; so does
	// the model: version 2 re-sends the same cluster.
	w.publish("2", lds1, rds1, cds1, eds2)
	w.sendAck("CDS", "2", cds1)
	w.sendAck("EDS", "2", eds2)
	view = grpcView(t, acked(lds1, "1"), acked(rds1, "1"), acked(cds1, "2"), acked(eds2, "2"))
	assert.Empty(t, Check(w.model(ClientGRPC), view))
}

func TestGRPCVersionMismatch(t *testing.T) {
	w := grpcSynced(t)
	view := grpcView(t, acked(lds1, "1"), acked(rds1, "1"), acked(cds1, "7"), acked(eds1, "1"))
	f := one(t, Check(w.model(ClientGRPC), view), "CDS", "inventory")
	assert.Equal(t, `ACKed version 1 (content 33333333)`, f.Model)
	assert.Equal(t, "ACKED version 7", f.Client)
	assert.Contains(t, f.String(), "CDS/inventory: xds.log says ACKed version 1")
}

// grpcNack is the error_detail grpc-go sends for the invalid route: its per-resource
// detail (what CSDS reports) inside the combined message (channel.go combineErrors).
const (
	routeDetail = `route [inventory]: route match has no path specifier`
	grpcNack    = `error parsing "RouteConfigResource" response: resource "quote-route": ` + routeDetail
)

func nackedRoute(t *testing.T) *wire {
	w := grpcSynced(t)
	w.publish("2", lds1, rdsBad, cds1, eds1)
	w.nack("RDS", w.send("RDS", "2", rdsBad), grpcNack)
	return w
}

func TestGRPCNack(t *testing.T) {
	w := nackedRoute(t)
	m := w.model(ClientGRPC)
	require.Equal(t, xdslog.TypeNacked, m.Stream.Types["RDS"].State)
	base := []*statuspb.ClientConfig_GenericXdsConfig{acked(lds1, "1"), acked(cds1, "1"), acked(eds1, "1")}
	view := func(r *statuspb.ClientConfig_GenericXdsConfig) []Resource { return grpcView(t, append(base, r)...) }

	assert.Empty(t, Check(m, view(nackedRow("RDS", "quote-route", "1", "2", routeDetail))),
		"NACKED keeping version 1, rejected version 2, its error part of the NACK's")

	f := one(t, Check(m, view(nackedRow("RDS", "quote-route", "1", "2", "some other reason"))), "RDS", "quote-route")
	assert.Contains(t, f.Model, "NACKed with")
	assert.Contains(t, f.Client, "some other reason")

	f = one(t, Check(m, view(nackedRow("RDS", "quote-route", "1", "5", routeDetail))), "RDS", "quote-route")
	assert.Equal(t, "NACKed version 2", f.Model)

	f = one(t, Check(m, view(nackedRow("RDS", "quote-route", "0", "2", routeDetail))), "RDS", "quote-route")
	assert.Contains(t, f.Model, "the client keeps version 1")

	// The client took the rejected version: two findings, the version and the NACK.
	got := Check(m, view(acked(rdsBad, "2")))
	require.Len(t, got, 2, "%v", got)
	assert.Equal(t, "quote-route", got[0].Name)
	assert.Equal(t, "", got[1].Name, "a type-level finding: no NACKED RDS resource")
	assert.Contains(t, got[1].Model, "NACKed version 2")
}

func TestGRPCNackTheModelDoesNotHave(t *testing.T) {
	w := grpcSynced(t)
	view := grpcView(t, acked(lds1, "1"), nackedRow("RDS", "quote-route", "1", "1", routeDetail), acked(cds1, "1"), acked(eds1, "1"))
	f := one(t, Check(w.model(ClientGRPC), view), "RDS", "quote-route")
	assert.Equal(t, "the type is SYNCED at version 1", f.Model)
}

func TestGRPCMissingAndExtra(t *testing.T) {
	w := grpcSynced(t)
	f := one(t, Check(w.model(ClientGRPC), grpcView(t, acked(lds1, "1"), acked(rds1, "1"), acked(eds1, "1"))), "CDS", "inventory")
	assert.Equal(t, "nothing (absent)", f.Client)

	view := grpcView(t, acked(lds1, "1"), acked(rds1, "1"), acked(cds1, "1"), acked(eds1, "1"), acked(ghostCDS, "1"))
	f = one(t, Check(w.model(ClientGRPC), view), "CDS", "ghost")
	assert.Equal(t, "the client holds nothing (not published, not subscribed)", f.Model)
	assert.Equal(t, "ACKED version 1", f.Client)
}

func TestGRPCDoesNotExist(t *testing.T) {
	w := grpcSynced(t)
	w.subscribe("CDS", "inventory", "ghost") // never published
	m := w.model(ClientGRPC)
	base := []*statuspb.ClientConfig_GenericXdsConfig{acked(lds1, "1"), acked(rds1, "1"), acked(cds1, "1"), acked(eds1, "1")}
	for _, st := range []adminv3.ClientResourceStatus{adminv3.ClientResourceStatus_REQUESTED, adminv3.ClientResourceStatus_DOES_NOT_EXIST} {
		assert.Empty(t, Check(m, grpcView(t, append(base, csdsRow("CDS", "ghost", "", st))...)), "%s", st)
	}
	f := one(t, Check(m, grpcView(t, base...)), "CDS", "ghost")
	assert.Contains(t, f.Client, "no state for it")

	// Does not exist, but published; or held.
	m.Published["CDS"]["ghost"] = ghostCDS.hash
	f = one(t, Check(m, grpcView(t, append(base, csdsRow("CDS", "ghost", "", adminv3.ClientResourceStatus_DOES_NOT_EXIST))...)), "CDS", "ghost")
	assert.Equal(t, "it is published (66666666) and not held", f.Model)
	f = one(t, Check(m, grpcView(t, acked(lds1, "1"), acked(rds1, "1"), csdsRow("CDS", "inventory", "", adminv3.ClientResourceStatus_DOES_NOT_EXIST),
		csdsRow("CDS", "ghost", "", adminv3.ClientResourceStatus_REQUESTED), acked(eds1, "1"))), "CDS", "inventory")
	assert.Contains(t, f.Model, "ACKed version 1")

	// A name the model never saw subscribed.
	f = one(t, Check(m, grpcView(t, append(base, csdsRow("CDS", "ghost", "", adminv3.ClientResourceStatus_REQUESTED),
		csdsRow("EDS", "elsewhere", "", adminv3.ClientResourceStatus_REQUESTED))...)), "EDS", "elsewhere")
	assert.Equal(t, "the client is not subscribed to it", f.Model)
}

// A response the client applied before its ACK was recorded: the send is STALE and the
// view has its version; a removal likewise.
func TestInFlight(t *testing.T) {
	w := grpcSynced(t)
	w.publish("2", lds1, rds1, eds2)
	w.send("EDS", "2", eds2)
	w.send("CDS", "2") // the cluster removed by absence
	view := grpcView(t, acked(lds1, "1"), acked(rds1, "1"), csdsRow("CDS", "inventory", "", adminv3.ClientResourceStatus_DOES_NOT_EXIST), acked(eds2, "2"))
	assert.Empty(t, Check(w.model(ClientGRPC), view))

	f := one(t, Check(w.model(ClientGRPC), grpcView(t, acked(lds1, "1"), acked(rds1, "1"), acked(cds1, "1"), acked(eds2, "3"))), "EDS", "inventory")
	assert.Equal(t, "ACKED version 3", f.Client, "version 3 was never sent")
}

// edsRow is an endpoint assignment as Envoy's config dump shows it: no version, no
// content (FromEnvoyConfigDump).
func edsRow(name, status string) Resource {
	return Resource{Type: "EDS", Name: name, Status: status, PresenceOnly: true}
}

// Envoy SotW keeps, per resource, the label of the response that last changed it; with
// uniform versions the model's label moves on every publish. The label book joins them.
func TestEnvoySotWLabels(t *testing.T) {
	w := newWire(t, protocol.SotW)
	w.publish("1", cds1, eds1)
	w.subscribe("CDS")
	w.sendAck("CDS", "1", cds1)
	w.subscribe("EDS", "inventory")
	w.sendAck("EDS", "1", eds1)
	w.publish("2", cds1, eds2) // the endpoint moves; uniform: CDS re-sent unchanged
	w.sendAck("CDS", "2", cds1)
	w.sendAck("EDS", "2", eds2)
	m := w.model(ClientEnvoy)
	require.Equal(t, "2", m.Stream.Accepted["CDS"]["inventory"].Version)

	envoyRow := func(version string) []Resource {
		return []Resource{{Type: "CDS", Name: "inventory", Version: version, Status: StatusACKED}, edsRow("inventory", StatusACKED)}
	}
	assert.Empty(t, Check(m, envoyRow("1")), "label 1 carried the content the model says Envoy holds")
	assert.Empty(t, Check(m, envoyRow("2")))
	f := one(t, Check(m, envoyRow("9")), "CDS", "inventory")
	assert.Contains(t, f.Model, `label "9" is not in the label book`)

	// grpc-go's rule is exact: label 1 is not the model's 2.
	one(t, Check(Model{Client: ClientGRPC, Mode: m.Mode, Stream: m.Stream, Published: m.Published, Labels: m.Labels},
		[]Resource{{Type: "CDS", Name: "inventory", Version: "1", Status: StatusACKED}, {Type: "EDS", Name: "inventory", Version: "2", Status: StatusACKED}}),
		"CDS", "inventory")

	// A content change: Envoy must say the label that carried the new content.
	changed := res{"CDS", "inventory", hash('7')}
	w.publish("3", changed, eds2)
	w.sendAck("CDS", "3", changed)
	m = w.model(ClientEnvoy)
	assert.Empty(t, Check(m, envoyRow("3")))
	f = one(t, Check(m, envoyRow("1")), "CDS", "inventory")
	assert.Contains(t, f.Model, `label "1" carried content 33333333`)
}

func TestEnvoyDeltaVersionsAreHashes(t *testing.T) {
	w := newWire(t, protocol.Delta)
	w.publish("1", cds1)
	w.subscribe("CDS", "*")
	w.sendAck("CDS", "1", cds1)
	m := w.model(ClientEnvoy)
	assert.Empty(t, Check(m, []Resource{{Type: "CDS", Name: "inventory", Version: cds1.hash, Status: StatusACKED}}))
	one(t, Check(m, []Resource{{Type: "CDS", Name: "inventory", Version: "1", Status: StatusACKED}}), "CDS", "inventory")

	// A warming cluster whose CDS response Envoy has not answered: in flight.
	w.publish("2", cds1, ghostCDS)
	w.send("CDS", "2", ghostCDS)
	m = w.model(ClientEnvoy)
	assert.Empty(t, Check(m, []Resource{{Type: "CDS", Name: "inventory", Version: cds1.hash, Status: StatusACKED},
		{Type: "CDS", Name: "ghost", Version: ghostCDS.hash, Status: StatusACKED, Warming: true}}))
}

// Envoy reports no DOES_NOT_EXIST: a name it never got is absent, which agrees; and its
// assignments without endpoints are not compared.
func TestEnvoyAbsentAndUnknown(t *testing.T) {
	w := newWire(t, protocol.SotW)
	w.publish("1", cds1, eds1)
	w.subscribe("EDS", "inventory", "ghost")
	w.sendAck("EDS", "1", eds1)
	m := w.model(ClientEnvoy)
	assert.Empty(t, Check(m, []Resource{edsRow("inventory", StatusACKED)}))
	assert.Empty(t, Check(m, []Resource{edsRow("inventory", StatusACKED), edsRow("ghost", StatusUnknown)}))
	f := one(t, Check(m, []Resource{edsRow("inventory", StatusACKED), edsRow("ghost", StatusACKED)}), "EDS", "ghost")
	assert.Equal(t, "the client holds nothing (not published)", f.Model)
	one(t, Check(m, nil), "EDS", "inventory")
}

func TestCheckOddInput(t *testing.T) {
	w := grpcSynced(t)
	view := grpcView(t, acked(lds1, "1"), acked(rds1, "1"), acked(cds1, "1"), acked(eds1, "1"))
	f := one(t, Check(w.model(ClientGRPC), append(view, view[0])), "CDS", "inventory") // FromCSDS sorts: CDS first
	assert.Equal(t, "it twice", f.Client)
	// VHDS and unknown types are not compared; an empty model against an empty view agrees.
	assert.Empty(t, Check(Model{}, []Resource{{Type: "VHDS", Name: "x", Status: StatusACKED}, {Type: "?", Status: "?"}}))
}

func TestFromCSDS(t *testing.T) {
	_, err := FromCSDS(nil, node)
	assert.EqualError(t, err, "CSDS: no response")
	_, err = FromCSDS(&statuspb.ClientStatusResponse{Config: []*statuspb.ClientConfig{{Node: &corev3.Node{Id: "other"}}}}, node)
	assert.EqualError(t, err, `CSDS: no client config for node "teaching-envoy" (nodes: other)`)
	two := &statuspb.ClientStatusResponse{Config: []*statuspb.ClientConfig{
		{Node: &corev3.Node{Id: node}, ClientScope: "xds:///a"}, {Node: &corev3.Node{Id: node}, ClientScope: "xds:///b"}}}
	_, err = FromCSDS(two, node)
	assert.ErrorContains(t, err, "2 xDS clients (scopes xds:///a, xds:///b)")
	bad := &statuspb.ClientStatusResponse{Config: []*statuspb.ClientConfig{{Node: &corev3.Node{Id: node},
		GenericXdsConfigs: []*statuspb.ClientConfig_GenericXdsConfig{{TypeUrl: "type.googleapis.com/x.Y", Name: "n"}}}}}
	_, err = FromCSDS(bad, node)
	assert.ErrorContains(t, err, `type "type.googleapis.com/x.Y"`)

	v := grpcView(t, nackedRow("RDS", "quote-route", "1", "2", routeDetail), csdsRow("CDS", "a", "", adminv3.ClientResourceStatus(42)))
	assert.Equal(t, []Resource{
		{Type: "CDS", Name: "a", Status: StatusUnknown},
		{Type: "RDS", Name: "quote-route", Version: "1", Status: StatusNACKED, Error: routeDetail, RejectedVersion: "2"},
	}, v)
}

// CSDS carries each resource as received (xds_config): its hash is compared too.
func TestGRPCContent(t *testing.T) {
	body := []byte("the cluster as sent")
	cluster := res{"CDS", "inventory", cachev3.HashResource(body)}
	w := newWire(t, protocol.SotW)
	w.publish("1", cluster)
	w.subscribe("CDS", "inventory")
	w.sendAck("CDS", "1", cluster)
	withBody := func(b []byte) []Resource {
		g := acked(cluster, "1")
		g.XdsConfig = &anypb.Any{TypeUrl: resources.CDS.URL(), Value: b}
		return grpcView(t, g)
	}
	assert.Empty(t, Check(w.model(ClientGRPC), withBody(body)))
	f := one(t, Check(w.model(ClientGRPC), withBody([]byte("another cluster"))), "CDS", "inventory")
	assert.Contains(t, f.Model, "the client's copy is content")
}

// grpc-go applies the valid resources of a SotW response it NACKs and reports them ACKED
// under the rejected version (Check, rule 7). The fixture fails without the rule: the
// model keeps CDS at version 1 with only "inventory".
func TestGRPCPartialAccept(t *testing.T) {
	bodies := map[string][]byte{"inventory": []byte("inventory v1"), "fresh": []byte("a valid new cluster"),
		"broken": []byte("a cluster grpc-go rejects")}
	cds := func(name string) res { return res{"CDS", name, cachev3.HashResource(bodies[name])} }
	w := newWire(t, protocol.SotW)
	w.publish("1", cds("inventory"))
	w.subscribe("CDS", "inventory", "fresh", "broken")
	w.sendAck("CDS", "1", cds("inventory"))
	w.publish("2", cds("inventory"), cds("fresh"), cds("broken"))
	w.nack("CDS", w.send("CDS", "2", cds("inventory"), cds("fresh"), cds("broken")),
		`error parsing "ClusterResource" response: resource "broken": `+routeDetail)
	m := w.model(ClientGRPC)
	require.Equal(t, xdslog.TypeNacked, m.Stream.Types["CDS"].State)

	row := func(name, version string, body []byte) *statuspb.ClientConfig_GenericXdsConfig {
		g := acked(cds(name), version)
		g.XdsConfig = &anypb.Any{TypeUrl: resources.CDS.URL(), Value: body}
		return g
	}
	broken := nackedRow("CDS", "broken", "", "2", routeDetail)
	view := func(fresh *statuspb.ClientConfig_GenericXdsConfig) []Resource {
		return grpcView(t, row("inventory", "2", bodies["inventory"]), fresh, broken)
	}
	assert.Empty(t, Check(m, view(row("fresh", "2", bodies["fresh"]))),
		"the valid resources ACKED under the rejected version with the rejected send's content")

	f := one(t, Check(m, view(row("fresh", "2", []byte("content the send did not carry")))), "CDS", "fresh")
	assert.Contains(t, f.Model, "the client holds nothing")
	one(t, Check(m, view(row("fresh", "3", bodies["fresh"]))), "CDS", "fresh")
	one(t, Check(m, view(acked(cds("fresh"), "2"))), "CDS", "fresh") // no content: not shown to be the send's

	m.Client = ClientEnvoy // the rule is grpc-go's, not the protocol's
	assert.NotEmpty(t, Check(m, view(row("fresh", "2", bodies["fresh"]))))
}
