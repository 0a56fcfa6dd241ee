package churn

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/option"
)

// series is n samples 10 s apart whose heap, goroutines and fds are f(i), with the log
// growing logPer bytes per publish (10 publishes a sample) times g(i).
func series(n int, f func(i int) float64, g func(i int) float64) []Sample {
	var out []Sample
	var log int64
	for i := range n {
		log += int64(1000 * g(i))
		out = append(out, Sample{Elapsed: time.Duration(i) * 10 * time.Second, HeapBytes: uint64(f(i)), Goroutines: int(f(i)),
			FDs: int(f(i)), LogBytes: log, Publishes: int64(10 * i)})
	}
	return out
}

func flat(int) float64 { return 1000 }

func TestGrowthVerdict(t *testing.T) {
	assert.True(t, GrowthVerdict(series(60, flat, flat), time.Minute, 0.1).Passed, "flat")
	growing := GrowthVerdict(series(60, func(i int) float64 { return 1000 + 10*float64(i) }, flat), time.Minute, 0.1)
	assert.False(t, growing.Passed)
	assert.Len(t, growing.Reasons, 3, "heap, goroutines and fds each fail")
	// One outlying sample at the end does not decide: the level is a median of three.
	spike := series(60, func(i int) float64 { return map[bool]float64{true: 5000, false: 1000}[i == 58] }, flat)
	assert.True(t, GrowthVerdict(spike, time.Minute, 0.1).Passed)
	assert.False(t, GrowthVerdict(series(7, flat, flat), time.Minute, 0.1).Passed, "too short to judge")
}

func TestLogRateVerdict(t *testing.T) {
	assert.True(t, LogRateVerdict(series(60, flat, flat), time.Minute, 0.25).Passed, "steady bytes per publish")
	faster := LogRateVerdict(series(60, flat, func(i int) float64 { return 1 + float64(i)/10 }), time.Minute, 0.25)
	assert.False(t, faster.Passed, "%v", faster.Figures)
	assert.Contains(t, faster.Reasons[0], "and per second")
	// A busy machine: the publisher's ticker drops ticks (half the publishes in the last
	// third) while clients and restarts write at their pace: per publish the log grows,
	// per second it does not, and that is no storm.
	slow := series(60, flat, flat)
	for i := 40; i < 60; i++ {
		slow[i].Publishes = slow[39].Publishes + int64(5*(i-39))
	}
	busy := LogRateVerdict(slow, time.Minute, 0.25)
	assert.True(t, busy.Passed, "%v %v", busy.Figures, busy.Reasons)
	assert.Contains(t, busy.Figures[0], "log bytes per publish 100000 -> 200000")
}

// writeLog writes lines as an xds.log and checks it.
func writeLog(t *testing.T, lines ...string) LogIntegrity {
	t.Helper()
	p := filepath.Join(t.TempDir(), "xds.log")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644))
	li, err := CheckLog(p)
	require.NoError(t, err)
	return li
}

const (
	openLine  = `{"ts":"2026-12-05T12:00:00Z","event":"stream_open","mode":"delta","server":1,"stream":1}` + "\n"
	send      = `{"ts":"2026-12-05T12:00:00Z","event":"send","mode":"delta","server":1,"stream":1,"type":"EDS","nonce":"1","version":"v1"}` + "\n"
	ack       = `{"ts":"2026-12-05T12:00:01Z","event":"ack","mode":"delta","server":1,"stream":1,"type":"EDS","nonce":"1"}` + "\n"
	closeLine = `{"ts":"2026-12-05T12:00:02Z","event":"stream_close","mode":"delta","server":1,"stream":1,"dropped":0}` + "\n"
)

func TestCheckLog(t *testing.T) {
	whole := writeLog(t, openLine, send, ack, closeLine)
	assert.Equal(t, LogIntegrity{Lines: 4, Sends: 1, Answered: 1}, whole)
	assert.True(t, IntegrityVerdict(map[string]LogIntegrity{"xds.log": whole}).Passed)

	closed := writeLog(t, openLine, send, closeLine)
	assert.Equal(t, 1, closed.Closed, "an unanswered send its stream's close follows is accounted")
	assert.True(t, IntegrityVerdict(map[string]LogIntegrity{"xds.log": closed}).Passed)

	for name, li := range map[string]LogIntegrity{
		"unanswered send":  writeLog(t, openLine, send),
		"torn line":        writeLog(t, openLine, send, ack[:40]+"\n", closeLine),
		"torn last line":   writeLog(t, openLine, send, ack, closeLine[:len(closeLine)-1]),
		"stream left open": writeLog(t, openLine, send, ack),
	} {
		assert.False(t, IntegrityVerdict(map[string]LogIntegrity{"xds.log": li}).Passed, name)
	}
	assert.Equal(t, 1, writeLog(t, openLine, send).Lost)
}

func TestOrphanVerdict(t *testing.T) {
	assert.True(t, OrphanVerdict(nil, os.Getpid()).Passed, "the test binary has no child")
	assert.False(t, OrphanVerdict([]int{os.Getpid()}, 0).Passed, "a pid alive")
}

func TestValidate(t *testing.T) {
	ok := Options{Out: t.TempDir()}.WithDefaults()
	require.NoError(t, ok.Validate())
	assert.Zero(t, ok.NackRate, "a zero NACK rate is no NACKs, not the default")
	assert.Equal(t, DefaultGrowthLimit, ok.GrowthLimit)
	assert.Equal(t, DefaultClients, ok.Clients)
	for name, o := range map[string]Options{
		"clients":          {Clients: -1},
		"kill interval":    {KillMin: time.Minute, KillMax: time.Second},
		"baseline":         {Duration: time.Minute, Baseline: 2 * time.Minute},
		"nack rate":        {NackRate: 1.5},
		"output directory": {},
	} {
		if name != "output directory" {
			o.Out = "x"
		}
		err := o.WithDefaults().Validate()
		var oe *option.Error
		require.True(t, errors.As(err, &oe), name)
		assert.Equal(t, name, oe.Option)
	}
	var re *option.RangeError
	assert.True(t, errors.As(Options{Clients: -1, Out: "x"}.WithDefaults().Validate(), &re))
}
