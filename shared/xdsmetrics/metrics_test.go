package xdsmetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// A handful of events, as the recorder hands them to its observer: every counter counts
// its own event kind, by type, and the histogram measures from the latest publish.
func TestObserve(t *testing.T) {
	t.Parallel()
	m := New(protocol.SotW, "snapshot")
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	res := func(n int) xdslog.Resources { return make(xdslog.Resources, n) }
	for _, e := range []xdslog.Event{
		{Event: xdslog.EventSession, TS: at(0)},
		{Event: xdslog.EventPublish, TS: at(0), Version: "1"},
		{Event: xdslog.EventStreamOpen, TS: at(1), Stream: 1},
		{Event: xdslog.EventStreamOpen, TS: at(1), Stream: 2},
		{Event: xdslog.EventSend, TS: at(2), Stream: 1, Type: "CDS", Resources: res(3), Bytes: 300},
		{Event: xdslog.EventSend, TS: at(2), Stream: 1, Type: "LDS", Resources: res(1), Bytes: 120},
		{Event: xdslog.EventAck, TS: at(20), Stream: 1, Type: "CDS"},
		{Event: xdslog.EventNack, TS: at(30), Stream: 1, Type: "LDS"},
		{Event: xdslog.EventPublish, TS: at(1000), Version: "2"},
		{Event: xdslog.EventSend, TS: at(1001), Stream: 1, Type: "CDS", Resources: res(2), Bytes: 200},
		{Event: xdslog.EventAck, TS: at(1500), Stream: 1, Type: "CDS"},
		{Event: xdslog.EventStale, TS: at(1501), Stream: 1, Type: "CDS"},
		{Event: xdslog.EventUnmatched, TS: at(1502), Stream: 1, Type: "EDS"},
		{Event: xdslog.EventRequest, TS: at(1503), Stream: 1, Type: "EDS"},
		{Event: xdslog.EventStreamClose, TS: at(2000), Stream: 2},
	} {
		e.Mode = protocol.SotW
		m.Observe(e)
	}
	l := func(typ string) []string { return []string{typ, protocol.SotW.String(), "snapshot"} }
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"pushes CDS", testutil.ToFloat64(m.pushes.WithLabelValues(l("CDS")...)), 2},
		{"pushes LDS", testutil.ToFloat64(m.pushes.WithLabelValues(l("LDS")...)), 1},
		{"pushes RDS", testutil.ToFloat64(m.pushes.WithLabelValues(l("RDS")...)), 0},
		{"resources CDS", testutil.ToFloat64(m.resources.WithLabelValues(l("CDS")...)), 5},
		{"bytes CDS", testutil.ToFloat64(m.bytes.WithLabelValues(l("CDS")...)), 500},
		{"bytes LDS", testutil.ToFloat64(m.bytes.WithLabelValues(l("LDS")...)), 120},
		{"acks CDS", testutil.ToFloat64(m.acks.WithLabelValues(l("CDS")...)), 2},
		{"nacks LDS", testutil.ToFloat64(m.nacks.WithLabelValues(l("LDS")...)), 1},
		{"nacks CDS", testutil.ToFloat64(m.nacks.WithLabelValues(l("CDS")...)), 0},
		{"stale CDS", testutil.ToFloat64(m.stale.WithLabelValues(l("CDS")...)), 1},
		{"unmatched EDS", testutil.ToFloat64(m.unmatched.WithLabelValues(l("EDS")...)), 1},
		{"streams", testutil.ToFloat64(m.streams.WithLabelValues(protocol.SotW.String(), "snapshot")), 1},
	} {
		assert.Equal(t, c.want, c.got, c.name)
	}

	// Two ACKs of CDS: 20ms after publish 1 and 500ms after publish 2.
	const want = `
# HELP lab_xds_publish_to_ack_seconds Time from the latest publish to each ACK (the ack event's time minus the publish event's), by xDS type.
# TYPE lab_xds_publish_to_ack_seconds histogram
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="0.001"} 0
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="0.0025"} 0
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="0.005"} 0
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="0.01"} 0
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="0.025"} 1
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="0.05"} 1
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="0.1"} 1
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="0.25"} 1
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="0.5"} 2
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="1"} 2
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="2.5"} 2
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="5"} 2
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="10"} 2
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="30"} 2
lab_xds_publish_to_ack_seconds_bucket{cache="snapshot",mode="sotw",type="CDS",le="+Inf"} 2
lab_xds_publish_to_ack_seconds_sum{cache="snapshot",mode="sotw",type="CDS"} 0.52
lab_xds_publish_to_ack_seconds_count{cache="snapshot",mode="sotw",type="CDS"} 2
`
	// Only the CDS series: collect it alone.
	h := m.publishToAck.WithLabelValues(l("CDS")...).(prometheus.Histogram)
	require.NoError(t, testutil.CollectAndCompare(h, strings.NewReader(want), "lab_xds_publish_to_ack_seconds"))
}

// TestOnDemandAndNotFound: VHDS is a type label from the start; an on-demand subscribe
// request counts by type, other requests do not; a not-found answer counts apart from the
// resources sent.
func TestOnDemandAndNotFound(t *testing.T) {
	t.Parallel()
	m := New(protocol.Delta, "snapshot")
	l := func(typ string) []string { return []string{typ, protocol.Delta.String(), "snapshot"} }
	assert.Equal(t, 0.0, testutil.ToFloat64(m.onDemand.WithLabelValues(l("VHDS")...)))
	n, err := testutil.GatherAndCount(m.Registry(), "lab_xds_pushes_total")
	require.NoError(t, err)
	assert.Equal(t, len(xdslog.Types), n, "a series per type, VHDS included, before any push")
	for _, e := range []xdslog.Event{
		{Event: xdslog.EventRequest, Type: "VHDS", Kind: xdslog.RequestWildcard},
		{Event: xdslog.EventRequest, Type: "VHDS", Kind: xdslog.RequestOnDemand, Added: []string{"quote-route/svc-0001"}},
		{Event: xdslog.EventRequest, Type: "VHDS", Kind: xdslog.RequestOnDemand, Added: []string{"quote-route/svc-b:19000"}},
		{Event: xdslog.EventRequest, Type: "CDS", Kind: xdslog.RequestOnDemand, Added: []string{"inventory-0001"}},
		{Event: xdslog.EventRequest, Type: "EDS", Kind: xdslog.RequestSubscribe, Added: []string{"inventory-0001"}},
		{Event: xdslog.EventSend, Type: "VHDS", Resources: xdslog.Resources{{Name: "quote-route/svc-0001", Hash: "h"}}},
		{Event: xdslog.EventSend, Type: "VHDS", Resources: xdslog.Resources{{Name: "quote-route/svc-b:19000", NotFound: true}}},
	} {
		e.Mode = protocol.Delta
		m.Observe(e)
	}
	assert.Equal(t, 2.0, testutil.ToFloat64(m.onDemand.WithLabelValues(l("VHDS")...)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.onDemand.WithLabelValues(l("CDS")...)))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.onDemand.WithLabelValues(l("EDS")...)))
	assert.Equal(t, 2.0, testutil.ToFloat64(m.pushes.WithLabelValues(l("VHDS")...)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.resources.WithLabelValues(l("VHDS")...)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.notFound.WithLabelValues(l("VHDS")...)))
}
