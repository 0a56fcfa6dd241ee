package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The on-demand fixture: a small synthetic pair (testdata/ondemand, see its README)
// written through the real recorder with a hand-set clock, modelled on what real Envoy
// does in experiments/controlplane/ondemand_envoy_test.go: SotW NACKs the VHDS route
// configuration; delta subscribes "<route>/<Host>" on demand, once found and once not.
const (
	onDemandSotW  = "testdata/ondemand/sotw"
	onDemandDelta = "testdata/ondemand/delta"
)

var onDemandGoldens = []struct{ file, format string }{
	{"golden-ondemand.txt", "text"},
	{"golden-ondemand.md", "markdown"},
	{"golden-ondemand.json", "json"},
}

// onDemandClock is the fixture's clock: it moves only when told.
type onDemandClock struct{ t time.Time }

func (c *onDemandClock) now() time.Time { return c.t }
func (c *onDemandClock) after(ms float64) time.Time {
	c.t = c.t.Add(time.Duration(ms * float64(time.Millisecond)))
	return c.t
}

var onDemandPublished = []xdslog.Resource{
	{Type: "LDS", Name: "listener", Hash: "l1"}, {Type: "RDS", Name: "quote-route", Hash: "r1"},
	{Type: "CDS", Name: "inventory-0001", Hash: "c1"}, {Type: "CDS", Name: "inventory-0002", Hash: "c2"},
	{Type: "EDS", Name: "inventory-0001", Hash: "e1"}, {Type: "EDS", Name: "inventory-0002", Hash: "e2"},
	{Type: "VHDS", Name: "quote-route/svc-0001", Hash: "v1"}, {Type: "VHDS", Name: "quote-route/svc-0002", Hash: "v2"},
}

func sent(names ...string) []xdslog.Resource {
	out := make([]xdslog.Resource, len(names))
	for i, n := range names {
		out[i] = xdslog.Resource{Name: n, Version: "1", Hash: "h-" + n}
	}
	return out
}

// writeOnDemandLog writes one run of the fixture.
func writeOnDemandLog(t *testing.T, mode protocol.Mode) []byte {
	var buf bytes.Buffer
	clk := &onDemandClock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	r := xdslog.NewRecorder(&buf, mode, xdslog.WithClock(clk.now))
	ok := true
	probe := func(id, host, path string, sentAt time.Time, status int, backend, flags string) {
		s := sentAt
		r.Emit(xdslog.Event{Event: xdslog.EventDataPlane, TS: clk.now(), SentTS: &s, RequestID: id, Host: host, Path: path,
			Status: status, Backend: backend, Flags: flags, Client: "envoy", Probe: xdslog.ProbeRequest, Correct: &ok})
	}
	r.SetStep("initial")
	r.Publish("1", onDemandPublished, []string{"LDS", "RDS", "CDS", "EDS", "VHDS"})
	clk.after(1)
	r.StreamOpen(1, "127.0.0.1:40000")
	n := 0
	exchange := func(typ string, req func(nonce string), res []xdslog.Resource, removed []string, bytes int, nack string) {
		clk.after(0.5)
		req("")
		n++
		nonce := string(rune('0' + n))
		clk.after(0.4)
		r.Send(1, typ, nonce, "1", res, removed, bytes)
		clk.after(0.8)
		if mode == protocol.SotW {
			q := xdslog.SotWRequest{VersionInfo: "1", Nonce: nonce, Names: namesOf(res)}
			if nack != "" {
				q.VersionInfo, q.Error = "", &nack
			}
			r.SotW(1, typ, q)
		} else {
			r.Delta(1, typ, xdslog.DeltaRequest{Nonce: nonce})
		}
	}
	first := func(typ string, names ...string) func(string) {
		return func(string) {
			if mode == protocol.SotW {
				r.SotW(1, typ, xdslog.SotWRequest{Node: "envoy-1", Names: names})
			} else {
				r.Delta(1, typ, xdslog.DeltaRequest{Node: "envoy-1", Subscribe: names})
			}
		}
	}
	exchange("CDS", first("CDS"), sent("inventory-0001", "inventory-0002"), nil, 310, "")
	exchange("EDS", first("EDS", "inventory-0001", "inventory-0002"), sent("inventory-0001", "inventory-0002"), nil, 260, "")
	exchange("LDS", first("LDS"), sent("listener"), nil, 420, "")
	if mode == protocol.SotW {
		exchange("RDS", first("RDS", "quote-route"), sent("quote-route"), nil, 120,
			"vhds: ADS must use DELTA_GRPC api_type when used as VHDS config source.")
	} else {
		exchange("RDS", first("RDS", "quote-route"), sent("quote-route"), nil, 120, "")
		// Envoy's first VHDS request is a legacy wildcard; OnDemandCache answers it
		// with removed_resources ["<route>/*"] and nothing else.
		exchange("VHDS", first("VHDS"), nil, []string{"quote-route/*"}, 60, "")
	}

	onDemand := func(step, host, path string, found bool, status int, backend, flags string) {
		r.SetStep(step)
		asked := clk.after(20)
		if mode == protocol.SotW {
			clk.after(1.1) // no VHDS: the route configuration was rejected
			probe("r-"+host, host, path, asked, status, backend, flags)
			return
		}
		name := "quote-route/" + host
		clk.after(1.3)
		r.Delta(1, "VHDS", xdslog.DeltaRequest{Subscribe: []string{name}})
		n++
		nonce := string(rune('0' + n))
		clk.after(0.9)
		res := []xdslog.Resource{{Name: name, Version: "1", NotFound: true}}
		if found {
			res = sent(name)
		}
		r.Send(1, "VHDS", nonce, "1", res, nil, 96)
		clk.after(0.6)
		r.Delta(1, "VHDS", xdslog.DeltaRequest{Nonce: nonce})
		clk.after(1.7)
		probe("r-"+host, host, path, asked, status, backend, flags)
	}
	if mode == protocol.SotW {
		onDemand("on-demand-vhost", "svc-0001", "/quote/1", true, 404, "", "NR")
		onDemand("unknown-host", "svc-b:19000", "/quote/1", false, 404, "", "NR")
	} else {
		onDemand("on-demand-vhost", "svc-0001", "/quote/1", true, 200, "inventory-0001", "")
		onDemand("unknown-host", "svc-b:19000", "/quote/1", false, 404, "", "NR")
	}
	require.NoError(t, r.Err())
	return buf.Bytes()
}

func namesOf(res []xdslog.Resource) []string {
	var out []string
	for _, x := range res {
		out = append(out, x.Name)
	}
	return out
}

// TestOnDemandGolden renders the on-demand pair and compares with its goldens (with
// -update: rewrites the fixture's logs and goldens).
func TestOnDemandGolden(t *testing.T) {
	if *update {
		for dir, mode := range map[string]protocol.Mode{onDemandSotW: protocol.SotW, onDemandDelta: protocol.Delta} {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "xds.log"), writeOnDemandLog(t, mode), 0o644))
		}
	}
	for _, c := range onDemandGoldens {
		got := renderWidth(t, report(t, onDemandSotW, onDemandDelta, compare.Options{}), c.format, 0)
		path := filepath.Join("testdata", c.file)
		if *update {
			require.NoError(t, os.WriteFile(path, got, 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "missing golden file: go test ./experiments/compare -run TestOnDemandGolden -update")
		if !bytes.Equal(want, got) {
			t.Fatalf("%s differs from the rendered report (regenerate with -update if intended):\n%s", path, firstDiff(want, got))
		}
	}
}

// TestOnDemandReport: the report says which names were fetched on demand, with the
// timeline's figures from the fixture's clock, shows the not-found answer as such, draws
// the on-demand subscribe apart, and states SotW's NACK reason.
func TestOnDemandReport(t *testing.T) {
	rep := report(t, onDemandSotW, onDemandDelta, compare.Options{})
	var delta compare.Figures
	for _, row := range rep.Rows {
		if row.Step == "on-demand-vhost" {
			delta = row.Runs[1]
			assert.Nil(t, row.Runs[0].OnDemand, "SotW subscribes nothing on demand")
		}
	}
	require.NotNil(t, delta.OnDemand)
	require.Len(t, delta.OnDemand.Fetches, 1)
	f := delta.OnDemand.Fetches[0]
	assert.Equal(t, "quote-route/svc-0001", f.Name)
	assert.Equal(t, "r-svc-0001", f.RequestID)
	require.NotNil(t, f.SubscribeMS)
	assert.InDelta(t, 1.3, *f.SubscribeMS, 1e-9)
	assert.InDelta(t, 2.2, *f.ResponseMS, 1e-9)
	assert.InDelta(t, 4.5, *f.AnswerMS, 1e-9)
	assert.Equal(t, 1, rep.Total[1].NotFound)
	assert.Zero(t, rep.Total[1].Redundant, "a not-found answer is never redundant")

	var texts []string
	for _, x := range rep.Findings {
		if x.Kind == "ondemand" {
			texts = append(texts, x.Attribution+": "+x.Text+" | "+x.Source)
		}
	}
	joined := strings.Join(texts, "\n")
	assert.Contains(t, joined, "B delta on-demand: Envoy fetched 1 of 2 virtual hosts")
	assert.Contains(t, joined, "fetched 0 of 2 virtual hosts and asked for 1 the server does not have (answered not found)")
	assert.Contains(t, joined, "RdsRouteConfigProviderImpl::requestVirtualHostsUpdate")
	assert.Contains(t, joined, "OnDemandCache")
	// Fetching on demand is Envoy's and the cache's; incremental xDS only allows it.
	assert.Contains(t, joined, "implementation: on-demand-vhost: B delta on-demand: Envoy fetched 1 of 2 virtual hosts")
	assert.Contains(t, joined, `xDS protocol, "Incremental xDS"`)
	// The not-found answer is the workbench's OnDemandCache, which the spec's removed_resources would replace.
	assert.Contains(t, joined, cite.OnDemandNotFound.String())
	// VHDS has no SotW variant: the protocol, which Envoy enforces by NACKing.
	assert.Contains(t, joined, "protocol: initial: A sotw cannot fetch virtual hosts on demand")
	assert.Contains(t, joined, `xDS protocol, "RPC Services and Methods for Each Variant"`)
	assert.Contains(t, joined, "vhds: ADS must use DELTA_GRPC api_type")
	for _, x := range rep.Findings {
		if x.Kind == "ondemand" && strings.Contains(x.Text, "fetched") {
			assert.Equal(t, compare.AttrImplementation, x.Attribution, "no on-demand fetch is labelled protocol: %s", x.Text)
		}
	}

	var kinds []string
	for _, d := range rep.Diagrams {
		for _, m := range d.Messages {
			if m.Kind == compare.KindOnDemand {
				kinds = append(kinds, d.Run+" "+m.Label)
			}
		}
	}
	assert.Equal(t, []string{"B on-demand subscribe VHDS +[quote-route/svc-0001]", "B on-demand subscribe VHDS +[quote-route/svc-b:19000] missing [quote-route/svc-b:19000]"}, kinds)
	one := report(t, onDemandSotW, onDemandDelta, compare.Options{Step: "unknown-host"})
	for _, format := range []string{"text", "markdown", "html"} {
		out := string(renderWidth(t, one, format, 0))
		assert.Contains(t, out, "not found", format)
		assert.Contains(t, out, "on-demand subscribe VHDS", format)
		assert.Contains(t, out, "V=VHDS", format)
	}
}

// TestOnDemandHTMLInBrowser opens the on-demand pair's HTML report in headless Chromium:
// it renders, and the DOM Chromium built has the on-demand section with a row per fetch,
// its not-found answer, and the on-demand subscribes drawn as their own arrows.
func TestOnDemandHTMLInBrowser(t *testing.T) {
	bin := findChromium(t)
	rep := report(t, onDemandSotW, onDemandDelta, compare.Options{})
	dom := renderedDOM(t, bin, render(t, rep, "html"))
	require.Contains(t, dom, `<section id="ondemand">`)
	section := dom[strings.Index(dom, `<section id="ondemand">`):strings.Index(dom, `<section id="versions">`)]
	assert.Equal(t, 2, strings.Count(section, "<tr><td>"), "a row per fetch")
	assert.Contains(t, section, ">not found</td>")
	assert.Equal(t, 2, strings.Count(dom, `<g class="k-on_demand">`), "each on-demand subscribe is its own arrow")
}
