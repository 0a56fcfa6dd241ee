package analysis

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// TestStormSummaryCountsLikeTheLines: the figures of a log whose NACK storm was condensed
// (past the recorder's size limit) equal those of the same exchange written line by line.
func TestStormSummaryCountsLikeTheLines(t *testing.T) {
	figures := func(limit int64) (*Step, int) {
		var buf bytes.Buffer
		r := xdslog.NewRecorder(&buf, protocol.SotW, xdslog.WithMaxLogBytes(limit))
		r.SetStep("invalid-route")
		r.StreamOpen(1, "")
		bad := []xdslog.Resource{{Name: "quote-route", Version: "3", Hash: "bad"}}
		for i := 1; i <= 300; i++ {
			n := strconv.Itoa(i)
			r.Send(1, "RDS", n, "3", bad, nil, 269)
			msg := "path_specifier is required"
			r.Feedback(1, "RDS", xdslog.Feedback{Nonce: n, ClientVersion: "2", Error: &msg})
		}
		r.Send(1, "RDS", "301", "4", []xdslog.Resource{{Name: "quote-route", Version: "4", Hash: "good"}}, nil, 270)
		r.Feedback(1, "RDS", xdslog.Feedback{Nonce: "301", ClientVersion: "4"})
		r.StreamClose(1)
		ev, st, err := xdslog.Read(&buf)
		require.NoError(t, err)
		require.Zero(t, st.Skipped)
		s := Summarize(ev).Step("invalid-route")
		require.NotNil(t, s)
		return s, len(ev)
	}
	lines, nLines := figures(0)
	condensed, nCondensed := figures(1)
	assert.Less(t, nCondensed, nLines/10, "the storm was condensed")
	assert.Equal(t, *lines.Types["RDS"], *condensed.Types["RDS"])
	assert.Equal(t, 300, condensed.Types["RDS"].Nacks)
	assert.Equal(t, 299, condensed.Types["RDS"].RejectedResends)
	assert.Equal(t, 301, condensed.Types["RDS"].Responses)
	assert.Equal(t, lines.Versions, condensed.Versions)
	assert.Equal(t, lines.NackErrors, condensed.NackErrors)
	assert.Greater(t, condensed.NackRate, 0.0)
}
