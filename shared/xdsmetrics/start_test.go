package xdsmetrics

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
)

// TestStart: no address serves nothing; a bad one is refused on OptionAddr; a good one
// is served and said on out after the prefix.
func TestStart(t *testing.T) {
	t.Parallel()
	m, stop, err := Start("", protocol.Delta, "", nil, "")
	require.NoError(t, err)
	assert.Nil(t, m)
	stop()

	_, _, err = Start("10.0.0.1:9", protocol.Delta, "", nil, "")
	var oe *option.Error
	require.True(t, errors.As(err, &oe))
	assert.Equal(t, OptionAddr, oe.Option)
	assert.Equal(t, "10.0.0.1:9", oe.Value)

	var out bytes.Buffer
	m, stop, err = Start("localhost:0", protocol.SotW, "", &out, "[sotw] ")
	require.NoError(t, err)
	defer stop()
	assert.NotNil(t, m)
	assert.Regexp(t, `^\[sotw\] metrics: http://127\.0\.0\.1:\d+/metrics\n$`, out.String())
}
