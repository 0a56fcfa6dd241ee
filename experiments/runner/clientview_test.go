package runner

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/session"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// A client-view disagreement fails the step under CI (StrictClientView); otherwise it is
// kept as a warning check and the step stands. Either way the findings reach the
// checkpoint and xds.log; a view that could not be read is listed as not checked.
func TestRecordClientView(t *testing.T) {
	finding := clientview.Finding{Type: "CDS", Name: "inventory", Model: "ACKed version 2", Client: "ACKED version 7"}
	for _, c := range []struct {
		name     string
		strict   bool
		res      ClientViewResult
		ok, warn bool
		fails    bool
		skipped  bool
	}{
		{name: "agrees", res: ClientViewResult{Client: "envoy", Resources: 4}, ok: true},
		{name: "warning", res: ClientViewResult{Client: "envoy", Resources: 4, Total: 1, Findings: []clientview.Finding{finding}}, warn: true},
		{name: "strict", strict: true, res: ClientViewResult{Client: "envoy", Resources: 4, Total: 1, Findings: []clientview.Finding{finding}}, fails: true},
		{name: "not read", strict: true, res: ClientViewResult{Client: "envoy", Error: "read the client's view: refused"}, ok: true, skipped: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CI", "")
			var buf bytes.Buffer
			ses, err := session.New(session.Options{ControlPlane: controlplane.Options{Mode: protocol.SotW}, Log: &buf})
			require.NoError(t, err)
			t.Cleanup(func() { _ = ses.Close(context.Background()) })
			r := &Run{o: Options{StrictClientView: c.strict}, host: controlPlaneHost{ses: ses}}
			cp := &Checkpoint{}
			failed := false
			s := &stepRun{cp: cp, check: func(what string, ok bool, detail string) {
				cp.Checks = append(cp.Checks, Check{What: what, OK: ok, Detail: detail})
				failed = failed || !ok
			}}
			res := c.res
			r.recordClientView(s, &res, res.Findings)
			require.Len(t, cp.Checks, 1)
			ch := cp.Checks[0]
			assert.Equal(t, c.ok, ch.OK)
			assert.Equal(t, c.warn, ch.Warning)
			assert.Equal(t, c.skipped, ch.Skipped)
			assert.Equal(t, c.fails, failed, "the step fails")
			if len(res.Findings) > 0 {
				assert.Contains(t, ch.Detail, "CDS/inventory: xds.log says ACKed version 2; the client says ACKED version 7")
			}
			ev, _, err := xdslog.Read(&buf)
			require.NoError(t, err)
			require.Len(t, ev, 1)
			assert.Equal(t, xdslog.EventClientView, ev[0].Event)
			assert.Equal(t, len(res.Findings), len(ev[0].Findings))
			assert.Equal(t, res.Error, ev[0].Error)
		})
	}
}

// CI=true makes a disagreement fail the step without the option.
func TestClientViewStrictUnderCI(t *testing.T) {
	t.Setenv("CI", "true")
	assert.True(t, (&Options{}).clientViewStrict())
	t.Setenv("CI", "")
	assert.False(t, (&Options{}).clientViewStrict())
}
