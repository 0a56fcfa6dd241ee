package loopback

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAddr(t *testing.T) {
	h, p, err := ParseAddr("127.0.0.1:18000")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", h)
	assert.Equal(t, 18000, p)
	for _, bad := range []string{"0.0.0.0:18000", "localhost:18000", "[::1]:18000", "10.0.0.1:18000", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:abc", "127.0.0.1", ""} {
		_, _, err := ParseAddr(bad)
		assert.Error(t, err, bad)
	}
}

func TestPorts(t *testing.T) {
	for _, ok := range []int{1, 18080, 65535} {
		assert.NoError(t, ValidatePort(ok))
	}
	for _, bad := range []int{0, -1, 65536, 70000} {
		assert.Error(t, ValidatePort(bad))
	}
	_, err := ParsePort("abc")
	assert.ErrorContains(t, err, `"abc" is not a number`)
}

func TestListenNamesThePortInUse(t *testing.T) {
	l, err := Listen(0)
	require.NoError(t, err)
	defer l.Close()
	port := l.Addr().(interface{ String() string }).String()
	_, p, err := ParseAddr(port)
	require.NoError(t, err)
	_, err = Listen(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), strconv.Itoa(p))
	free, err := FreePort()
	require.NoError(t, err)
	assert.NoError(t, ValidatePort(free))
}
