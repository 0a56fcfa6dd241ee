package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/churn"
)

func TestChurnFlags(t *testing.T) {
	var got churn.Options
	cmd := newChurnCmdWith(func(_ context.Context, o churn.Options, _, _ io.Writer) error { got = o; return nil })
	cmd.SetArgs([]string{"--minutes", "2", "--clients", "40", "--envoys", "0", "--nack-rate", "0.1", "--kill-min", "5s", "--out", "/tmp/x"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, 2*time.Minute, got.Duration)
	assert.Equal(t, 40, got.Clients)
	assert.True(t, got.NoEnvoys, "--envoys 0 runs without Envoy")
	assert.Equal(t, 0.1, got.NackRate)
	assert.Equal(t, 5*time.Second, got.KillMin)
	assert.Equal(t, "/tmp/x", got.Out)
}

func TestChurnRefusesAFlag(t *testing.T) {
	err := runChurn(context.Background(), churn.Options{Clients: 1, Out: t.TempDir()}, io.Discard, io.Discard)
	assert.EqualError(t, err, "--clients 1: outside 2-20000")
}
