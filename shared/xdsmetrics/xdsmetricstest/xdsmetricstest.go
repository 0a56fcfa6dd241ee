// Package xdsmetricstest helps tests check xdsmetrics against the log it observed: Scrape
// reads a /metrics endpoint, FromLog counts an xds.log's events the way the metrics are
// documented to (docs/metrics.md), so a test can compare the two.
package xdsmetricstest

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Samples are scraped values by series: `name{label="value",...}` with the labels sorted,
// e.g. `lab_xds_ack_total{cache="snapshot",mode="sotw",type="CDS"}`. A histogram gives
// its _count and _sum series.
type Samples map[string]float64

// Series names a series the way Samples keys it.
func Series(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, labels[k])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// Scrape gets url (a /metrics endpoint) and parses the text exposition.
func Scrape(url string) (Samples, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("scrape %s: %s: %s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	out := Samples{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[Series(name, labels)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[Series(name, labels)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[Series(name+"_count", labels)] = float64(m.GetHistogram().GetSampleCount())
				out[Series(name+"_sum", labels)] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out, nil
}

// FromLog counts a log's events as the metrics of one mode and cache would: per type,
// send events (a storm summary counts as its sends), their resources (not-found answers
// apart) and bytes, on-demand subscribe requests, ack,
// nack (a storm's NACKs too), stale and unmatched events; stream_open less stream_close;
// and per type the ACKs after a publish with the time from the latest publish summed.
// Only the _count and _sum of the histogram are given.
func FromLog(events []xdslog.Event, mode protocol.Mode, cache string) Samples {
	out := Samples{}
	typed := func(name, typ string) string {
		return Series(name, map[string]string{"type": typ, "mode": mode.String(), "cache": cache})
	}
	for _, t := range xdslog.Types {
		for _, n := range []string{"pushes_total", "resources_sent_total", "sent_bytes_total", "ack_total", "nack_total", "stale_requests_total", "unmatched_requests_total", "not_found_total", "on_demand_subscribes_total"} {
			out[typed("lab_xds_"+n, t)] = 0
		}
		out[typed("lab_xds_publish_to_ack_seconds_count", t)] = 0
		out[typed("lab_xds_publish_to_ack_seconds_sum", t)] = 0
	}
	streams := Series("lab_xds_connected_streams", map[string]string{"mode": mode.String(), "cache": cache})
	out[streams] = 0
	var publish time.Time
	for _, e := range events {
		switch e.Event {
		case xdslog.EventPublish:
			publish = e.TS
		case xdslog.EventStreamOpen:
			out[streams]++
		case xdslog.EventStreamClose:
			out[streams]--
		case xdslog.EventSend:
			out[typed("lab_xds_pushes_total", e.Type)]++
			for _, r := range e.Resources {
				if r.NotFound {
					out[typed("lab_xds_not_found_total", e.Type)]++
				} else {
					out[typed("lab_xds_resources_sent_total", e.Type)]++
				}
			}
			out[typed("lab_xds_sent_bytes_total", e.Type)] += float64(e.Bytes)
		case xdslog.EventRequest:
			if e.Kind == xdslog.RequestOnDemand {
				out[typed("lab_xds_on_demand_subscribes_total", e.Type)]++
			}
		case xdslog.EventStorm:
			out[typed("lab_xds_pushes_total", e.Type)] += float64(e.Sends)
			for _, r := range e.Resources {
				if r.NotFound {
					out[typed("lab_xds_not_found_total", e.Type)] += float64(e.Sends)
				} else {
					out[typed("lab_xds_resources_sent_total", e.Type)] += float64(e.Sends)
				}
			}
			out[typed("lab_xds_sent_bytes_total", e.Type)] += float64(e.Bytes)
			out[typed("lab_xds_nack_total", e.Type)] += float64(e.Nacks)
		case xdslog.EventAck:
			out[typed("lab_xds_ack_total", e.Type)]++
			if !publish.IsZero() {
				out[typed("lab_xds_publish_to_ack_seconds_count", e.Type)]++
				out[typed("lab_xds_publish_to_ack_seconds_sum", e.Type)] += max(0, e.TS.Sub(publish).Seconds())
			}
		case xdslog.EventNack:
			out[typed("lab_xds_nack_total", e.Type)]++
		case xdslog.EventStale:
			out[typed("lab_xds_stale_requests_total", e.Type)]++
		case xdslog.EventUnmatched:
			out[typed("lab_xds_unmatched_requests_total", e.Type)]++
		}
	}
	return out
}
