package childproc

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStatCPU(t *testing.T) {
	// The command name may contain spaces and ')'; utime=250 stime=50 ticks -> 3s.
	stat := "4242 (envoy (main) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 1000 200 0"
	d, err := parseStatCPU(stat)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, d)

	_, err = parseStatCPU("4242 (envoy) S 1")
	assert.Error(t, err)
	_, err = parseStatCPU("no paren")
	assert.Error(t, err)
}

func TestParseVmRSS(t *testing.T) {
	n, err := parseVmRSS("Name:\tenvoy\nVmRSS:\t   51200 kB\nThreads:\t9\n")
	require.NoError(t, err)
	assert.Equal(t, int64(51200*1024), n)
	_, err = parseVmRSS("Name:\tenvoy\n")
	assert.ErrorContains(t, err, "no VmRSS")
}

// TestMeasuresOfThisProcess reads each measure of a live process (this one): the
// readers agree with the kernel's formats, not only with the fixtures above.
func TestMeasuresOfThisProcess(t *testing.T) {
	self, err := SelfCPU()
	require.NoError(t, err)
	assert.Positive(t, self)
	clock, err := CPUClock(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, clock)
	_, err = StatCPU(os.Getpid())
	require.NoError(t, err)
	rss, err := RSS(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, rss)
}
