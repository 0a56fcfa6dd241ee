package loopback

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNormalize: localhost means 127.0.0.1; port 0 only to bind; the error is the
// problem alone, without the address.
func TestNormalize(t *testing.T) {
	t.Parallel()
	a, err := Normalize("localhost:18000", false)
	assert.NoError(t, err)
	assert.Equal(t, "127.0.0.1:18000", a)
	a, err = Normalize("127.0.0.1:0", true)
	assert.NoError(t, err)
	assert.Equal(t, "127.0.0.1:0", a)
	_, err = Normalize("127.0.0.1:0", false)
	assert.Error(t, err)
	_, err = Normalize("10.0.0.1:80", true)
	if assert.Error(t, err) {
		assert.NotContains(t, err.Error(), "10.0.0.1")
	}
}
