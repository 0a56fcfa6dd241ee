package runner

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// clientViewSettle bounds how long a checkpoint waits for the client's own view and
// xds.log's model of it to agree. They are read at two instants, so an ACK on its way
// (the client applied a response, the recorder has not seen its ACK yet) can make them
// differ for a moment; a real disagreement lasts.
const clientViewSettle = 5 * time.Second

// maxFindings bounds the findings a checkpoint keeps (a disagreement about every one of
// 10,000 resources says nothing more than the first few).
const maxFindings = 20

// ClientViewResult is a checkpoint's cross-check of the client's own view against
// xds.log's model of its stream (experiments/clientview).
type ClientViewResult struct {
	// Client is whose view: "envoy" (its /config_dump?include_eds) or "grpc" (CSDS).
	Client string `json:"client"`
	// Server and Stream are the stream of the model compared (the newest of the node).
	Server int   `json:"server,omitempty"`
	Stream int64 `json:"stream,omitempty"`
	// Resources counts the rows of the client's view.
	Resources int `json:"resources"`
	// Findings are the disagreements left once the wait for agreement ended (at most
	// maxFindings; Total counts them all).
	Findings []clientview.Finding `json:"findings"`
	Total    int                  `json:"total_findings"`
	// Comparisons counts the views compared until they agreed or the wait ended: more
	// than one when the first read caught something in flight.
	Comparisons int `json:"comparisons"`
	// Error says why no comparison was made (no view, no stream).
	Error string `json:"error,omitempty"`
}

// clientViewer is evidence that reads the client's own view itself: grpc-go's through
// CSDS. Envoy's is read from the config dump the checkpoint keeps (envoyClientView).
type clientViewer interface {
	ClientView(ctx context.Context) ([]clientview.Resource, error)
}

// clientViewStrict says whether a disagreement fails the step: with CI=true (or
// Options.StrictClientView) it does; otherwise it is recorded as a warning, since a
// finding may be the recorder's model being wrong as much as the client.
func (o *Options) clientViewStrict() bool {
	return o.StrictClientView || os.Getenv("CI") == "true"
}

// checkClientView compares the client's own view with xds.log's model of its stream
// until they agree or clientViewSettle passes, and records the result: in the
// checkpoint, as a check (failed, or a warning outside CI, when they disagree), and as
// a client_view event in xds.log, which lab compare reads.
// first is the view already read for the checkpoint's evidence (firstOK false: none
// could be read); fetch reads it again.
func (r *Run) checkClientView(ctx context.Context, s *stepRun, client string, first []clientview.Resource, firstOK bool,
	fetch func(context.Context) ([]clientview.Resource, error)) {
	res := &ClientViewResult{Client: client}
	s.cp.ClientView = res
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), clientViewSettle)
	defer cancel()
	view, fetched := first, firstOK
	var findings []clientview.Finding
	compared := false // a comparison was made: a later failed read does not undo it
	var why string
	_ = r.wait(wctx, "the client's view to agree with xds.log", func() (bool, error) {
		if !fetched {
			v, err := fetch(wctx)
			if err != nil {
				why = "read the client's view: " + err.Error()
				return false, nil
			}
			view = v
		}
		fetched = false
		m, ok := r.host.clientModel(client, resources.NodeID)
		if !ok {
			why = "xds.log has no open stream of the client"
			return false, nil
		}
		res.Server, res.Stream, res.Resources = m.Stream.Server, m.Stream.Stream, len(view)
		findings, compared = clientview.Check(m, view), true
		res.Comparisons++
		return len(findings) == 0, nil
	})
	if !compared {
		res.Error = why
	}
	res.Total = len(findings)
	res.Findings = append([]clientview.Finding{}, findings[:min(len(findings), maxFindings)]...)
	r.recordClientView(s, res, findings)
}

// recordClientView writes the result as a check and an xds.log event, and says it.
func (r *Run) recordClientView(s *stepRun, res *ClientViewResult, findings []clientview.Finding) {
	what := fmt.Sprintf("the client's own view (%s) agrees with xds.log", viewSource(res.Client))
	lines := make([]string, len(res.Findings))
	for i, f := range res.Findings {
		lines[i] = f.String()
	}
	r.host.rec().Emit(xdslog.Event{Event: xdslog.EventClientView, Client: res.Client, Stream: res.Stream, Checked: res.Resources,
		Findings: lines, Error: res.Error})
	switch {
	case res.Error != "":
		s.cp.Checks = append(s.cp.Checks, Check{What: what, OK: true, Skipped: true, Detail: "not checked: " + res.Error})
		r.out.say("  client view not checked: %s", res.Error)
	case len(findings) == 0:
		s.check(what, true, fmt.Sprintf("%d resources, stream %d of server %d", res.Resources, res.Stream, res.Server))
	default:
		detail := fmt.Sprintf("%d finding(s): %s", len(findings), strings.Join(lines, "; "))
		for _, l := range lines {
			r.out.say("  client view: %s", l)
		}
		if r.o.clientViewStrict() {
			s.check(what, false, detail)
			return
		}
		// Outside CI a disagreement is evidence to look at, not the step's failure.
		s.cp.Checks = append(s.cp.Checks, Check{What: what, OK: false, Warning: true, Detail: detail})
	}
}

func viewSource(client string) string {
	if client == clientview.ClientEnvoy {
		return "Envoy's config dump"
	}
	return "grpc-go's CSDS"
}

// envoyClientView is the cross-check for Envoy: dump is the config dump the checkpoint
// already read; a later read replaces it, so the dump kept as evidence is the one the
// comparison ended on.
func (r *Run) envoyClientView(ctx context.Context, s *stepRun, ev client.AdminViewer, dump []byte) []byte {
	first, err := clientview.FromEnvoyConfigDump(dump)
	fetch := func(ctx context.Context) ([]clientview.Resource, error) {
		d, err := ev.ConfigDump(ctx)
		if err != nil {
			return nil, err
		}
		v, err := clientview.FromEnvoyConfigDump(d)
		if err == nil {
			dump = d
		}
		return v, err
	}
	r.checkClientView(ctx, s, clientview.ClientEnvoy, first, err == nil, fetch)
	return dump
}

// viewFindings counts a checkpoint's client-view findings (0 without one).
func viewFindings(cp *Checkpoint) int {
	if cp == nil || cp.ClientView == nil {
		return 0
	}
	return cp.ClientView.Total
}
