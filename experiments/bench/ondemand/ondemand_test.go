package ondemand

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestColdHosts: k services spread over 0..n-1, service 0 first; all of them when n <= k.
func TestColdHosts(t *testing.T) {
	assert.Equal(t, []int{0, 5, 10, 15}, coldHosts(20, 4))
	assert.Equal(t, []int{0, 1, 2}, coldHosts(3, 200))
}
