package runner

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// subscribedIn lists the names requests of typ subscribed in step (every server).
func subscribedIn(ev []xdslog.Event, step, typ string) []string {
	var out []string
	for _, e := range eventsOf(ev, step, xdslog.EventRequest, typ) {
		out = append(out, e.Added...)
	}
	return out
}

// sentIn lists the resources sends of typ carried in step, and whether each was a
// not-found answer.
func sentIn(ev []xdslog.Event, step, typ string) map[string]bool {
	out := map[string]bool{}
	for _, e := range eventsOf(ev, step, xdslog.EventSend, typ) {
		for _, r := range e.Resources {
			out[r.Name] = r.NotFound
		}
	}
	return out
}

// dataplaneFor is step's first dataplane event for host.
func dataplaneFor(t *testing.T, ev []xdslog.Event, step, host string) xdslog.Event {
	t.Helper()
	for _, e := range eventsOf(ev, step, xdslog.EventDataPlane, "") {
		if e.Host == host {
			require.NotNil(t, e.SentTS, "a dataplane event records when it was sent")
			assert.False(t, e.TS.Before(*e.SentTS), "answered after sent")
			return e
		}
	}
	t.Fatalf("no dataplane event for Host %s in %s", host, step)
	return xdslog.Event{}
}

// assertOnDemandVhost: no virtual host before traffic; each host subscribes to exactly
// <route>/<host>; a removal is removed_resources and the next request for that host gets
// 404 without a new subscribe; restoring it reaches Envoy unasked; an unknown host gets
// the not-found answer.
func assertOnDemandVhost(t *testing.T, ev []xdslog.Event) {
	t.Helper()
	assert.Empty(t, sentIn(ev, "initial", "VHDS"), "no virtual host is sent before traffic asks")
	assert.Equal(t, []string{"quote-route/a"}, subscribedIn(ev, "host-a", "VHDS"))
	assert.Equal(t, map[string]bool{"quote-route/a": false}, sentIn(ev, "host-a", "VHDS"))
	assert.Equal(t, []string{"quote-route/b"}, subscribedIn(ev, "host-b", "VHDS"), "host a is not fetched again")
	var removed []string
	for _, s := range eventsOf(ev, "remove-vhost-a", xdslog.EventSend, "VHDS") {
		removed = append(removed, s.Removed...)
	}
	assert.Equal(t, []string{"quote-route/a"}, removed)
	assert.Empty(t, subscribedIn(ev, "after-removal", "VHDS"), "Envoy answers the removed host without subscribing again")
	assert.Equal(t, 404, dataplaneFor(t, ev, "after-removal", "a").Status)
	assert.Empty(t, subscribedIn(ev, "restore-vhost-a", "VHDS"))
	assert.Equal(t, map[string]bool{"quote-route/a": false}, sentIn(ev, "restore-vhost-a", "VHDS"), "still subscribed: the restored vhost is sent unasked")
	assert.Equal(t, []string{"quote-route/ghost"}, subscribedIn(ev, "unknown-host", "VHDS"))
	assert.Equal(t, map[string]bool{"quote-route/ghost": true}, sentIn(ev, "unknown-host", "VHDS"), "the not-found answer")
}

// assertOnDemandCluster: no cluster before traffic; each request subscribes to exactly
// its one cluster and then its assignment; an endpoint move is sent unasked; an unknown
// cluster is subscribed and never answered.
func assertOnDemandCluster(t *testing.T, ev []xdslog.Event) {
	t.Helper()
	for _, typ := range []string{"CDS", "EDS"} {
		assert.Empty(t, sentIn(ev, "initial", typ), "no %s before traffic asks", typ)
		assert.Empty(t, subscribedIn(ev, "initial", typ))
		assert.Equal(t, []string{"svc-a"}, subscribedIn(ev, "by-name", typ))
		assert.Equal(t, []string{"svc-b"}, subscribedIn(ev, "by-header", typ), "the cluster the x-cluster header names")
	}
	assert.Equal(t, map[string]bool{"svc-b": false}, sentIn(ev, "endpoint-moves", "EDS"))
	assert.Empty(t, subscribedIn(ev, "endpoint-moves", "EDS"))
	assert.Equal(t, []string{"ghost"}, subscribedIn(ev, "unknown-cluster", "CDS"))
	assert.Empty(t, sentIn(ev, "unknown-cluster", "CDS"), "go-control-plane sends nothing for a cluster it does not have")
	// The held request waited for the odcds timeout (1s) before its 503: the order of
	// events says so, the duration is not asserted.
	dp := dataplaneFor(t, ev, "unknown-cluster", "")
	assert.Equal(t, 503, dp.Status)
	assert.Equal(t, "NC", dp.Flags)
}

// assertOnDemandRestart: the new stream re-subscribes to what was fetched, with
// initial_resource_versions (VHDS keeps the wildcard of its legacy-wildcard first
// request), and the server sends nothing that Envoy already has.
func assertOnDemandRestart(t *testing.T, ev []xdslog.Event) {
	t.Helper()
	resumed := map[string]xdslog.Event{}
	for _, e := range eventsOf(ev, "control-plane-restart", xdslog.EventRequest, "") {
		if _, seen := resumed[e.Type]; e.Server == 2 && !seen {
			resumed[e.Type] = e
		}
	}
	vh := resumed["VHDS"]
	assert.ElementsMatch(t, []string{"*", "quote-route/a", "quote-route/b"}, vh.Added, "the wildcard and the fetched virtual hosts")
	assert.Equal(t, []string{"quote-route/a", "quote-route/b"}, slices.Sorted(maps.Keys(vh.InitialVersions)))
	for _, typ := range []string{"CDS", "EDS"} {
		assert.ElementsMatch(t, []string{"svc-a", "svc-b"}, resumed[typ].Added, "%s: the fetched clusters by name", typ)
		assert.Equal(t, []string{"svc-a", "svc-b"}, slices.Sorted(maps.Keys(resumed[typ].InitialVersions)))
	}
	for _, typ := range []string{"VHDS", "CDS", "EDS"} {
		for _, s := range eventsOf(ev, "control-plane-restart", xdslog.EventSend, typ) {
			assert.NotEqual(t, 2, s.Server, "server 2 re-sends no %s: Envoy's versions match", typ)
		}
	}
	assert.Equal(t, map[string]bool{"quote-route/a": false}, sentIn(ev, "change-after-restart", "VHDS"))
	assert.Empty(t, subscribedIn(ev, "change-after-restart", "VHDS"))
}
