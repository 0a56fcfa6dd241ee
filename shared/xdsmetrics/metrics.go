// Package xdsmetrics exposes the control plane's xDS exchange as Prometheus metrics. It
// observes the events the xdslog.Recorder writes to xds.log (xdslog.WithObserver), so
// every figure is a count of the log's own lines: a push is a send event, an ACK an ack
// event, and so on. What an event is was decided by the recorder; this package only
// counts, never classifies. Serve exposes them on a loopback address at /metrics, from a
// registry of its own (not Prometheus' global one).
package xdsmetrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Namespace prefixes every metric: lab_xds_...
const Namespace = "lab"

// Subsystem is the second part of every metric name.
const Subsystem = "xds"

// Label names.
const (
	LabelType  = "type"
	LabelMode  = "mode"
	LabelCache = "cache"
)

// PublishToAckBuckets are the histogram's upper bounds, in seconds: from a loopback ACK
// (a millisecond) to a client held back for half a minute.
var PublishToAckBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Metrics counts one process's xDS exchange. Observe is its recorder observer; it is safe
// for concurrent use and quick (it runs under the recorder's lock).
type Metrics struct {
	reg   *prometheus.Registry
	cache string

	pushes, resources, bytes, acks, nacks, stale, unmatched *prometheus.CounterVec
	notFound, onDemand                                      *prometheus.CounterVec
	streams                                                 *prometheus.GaugeVec
	publishToAck                                            *prometheus.HistogramVec

	mu          sync.Mutex
	lastPublish time.Time // the latest publish event's time
}

// New returns metrics whose cache label is cache ("snapshot" or "linear"); mode, when
// given, pre-creates every series of that mode at 0, so a scrape before the first push
// already lists them.
func New(mode protocol.Mode, cache string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), cache: cache}
	byType := []string{LabelType, LabelMode, LabelCache}
	counter := func(name, help string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: Subsystem, Name: name, Help: help}, byType)
		m.reg.MustRegister(c)
		return c
	}
	m.pushes = counter("pushes_total", "Responses sent (xds.log send events), by xDS type.")
	m.resources = counter("resources_sent_total", "Resources carried by the responses sent (the send events' resources, not-found answers left out).")
	m.notFound = counter("not_found_total", "Bodiless \"does not exist\" answers sent for names a client subscribed to (send event resources with not_found).")
	m.onDemand = counter("on_demand_subscribes_total", "Subscribes a client sent because traffic asked for a name (xds.log request events of kind on-demand: VHDS, CDS).")
	m.bytes = counter("sent_bytes_total", "Bytes of the responses sent, as serialized (the send events' bytes).")
	m.acks = counter("ack_total", "Responses the client accepted (xds.log ack events).")
	m.nacks = counter("nack_total", "Responses the client rejected (xds.log nack events).")
	m.stale = counter("stale_requests_total", "SotW requests whose response nonce was not the latest sent, dropped by go-control-plane (xds.log stale events).")
	m.unmatched = counter("unmatched_requests_total", "Requests whose response nonce matches no send on the stream (xds.log unmatched events).")
	m.streams = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: Subsystem, Name: "connected_streams",
		Help: "ADS streams open now (xds.log stream_open minus stream_close events)."}, []string{LabelMode, LabelCache})
	m.reg.MustRegister(m.streams)
	m.publishToAck = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: Subsystem, Name: "publish_to_ack_seconds",
		Help:    "Time from the latest publish to each ACK (the ack event's time minus the publish event's), by xDS type.",
		Buckets: PublishToAckBuckets}, byType)
	m.reg.MustRegister(m.publishToAck)
	if mode != "" {
		m.streams.WithLabelValues(mode.String(), cache)
		for _, t := range xdslog.Types {
			for _, v := range []*prometheus.CounterVec{m.pushes, m.resources, m.bytes, m.acks, m.nacks, m.stale, m.unmatched, m.notFound, m.onDemand} {
				v.WithLabelValues(t, mode.String(), cache)
			}
			m.publishToAck.WithLabelValues(t, mode.String(), cache)
		}
	}
	return m
}

// Registry is the metrics' own registry.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Observe counts one recorded event. A send folded into a storm summary is observed one
// by one as the recorder applies it (xdslog.WithObserver), so storms need no case here;
// an EventStorm replayed from a log is not counted. A nil *Metrics counts nothing.
func (m *Metrics) Observe(e xdslog.Event) {
	if m == nil {
		return
	}
	switch e.Event {
	case xdslog.EventPublish:
		m.mu.Lock()
		m.lastPublish = e.TS
		m.mu.Unlock()
	case xdslog.EventStreamOpen:
		m.streams.WithLabelValues(e.Mode.String(), m.cache).Inc()
	case xdslog.EventStreamClose:
		m.streams.WithLabelValues(e.Mode.String(), m.cache).Dec()
	case xdslog.EventSend:
		m.pushes.WithLabelValues(e.Type, e.Mode.String(), m.cache).Inc()
		nf := notFound(e.Resources)
		m.resources.WithLabelValues(e.Type, e.Mode.String(), m.cache).Add(float64(len(e.Resources) - nf))
		m.notFound.WithLabelValues(e.Type, e.Mode.String(), m.cache).Add(float64(nf))
		m.bytes.WithLabelValues(e.Type, e.Mode.String(), m.cache).Add(float64(e.Bytes))
	case xdslog.EventAck:
		m.acks.WithLabelValues(e.Type, e.Mode.String(), m.cache).Inc()
		m.mu.Lock()
		pub := m.lastPublish
		m.mu.Unlock()
		if !pub.IsZero() {
			m.publishToAck.WithLabelValues(e.Type, e.Mode.String(), m.cache).Observe(max(0, e.TS.Sub(pub).Seconds()))
		}
	case xdslog.EventNack:
		m.nacks.WithLabelValues(e.Type, e.Mode.String(), m.cache).Inc()
	case xdslog.EventStale:
		m.stale.WithLabelValues(e.Type, e.Mode.String(), m.cache).Inc()
	case xdslog.EventUnmatched:
		m.unmatched.WithLabelValues(e.Type, e.Mode.String(), m.cache).Inc()
	case xdslog.EventRequest:
		if e.Kind == xdslog.RequestOnDemand {
			m.onDemand.WithLabelValues(e.Type, e.Mode.String(), m.cache).Inc()
		}
	}
}

// notFound counts a send's not-found answers (xdslog.Resource.NotFound).
func notFound(res xdslog.Resources) int {
	n := 0
	for _, r := range res {
		if r.NotFound {
			n++
		}
	}
	return n
}
