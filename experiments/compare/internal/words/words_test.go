package words

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRatioText: a ratio reads right at every size, a lab serve log's 1,729 bytes over
// 4,415,311 included (once printed as 0.00).
func TestRatioText(t *testing.T) {
	for _, c := range []struct {
		a, b int
		want string
	}{
		{1729, 4415311, "1/2554"},
		{4415311, 1729, "2554"},
		{8304, 269, "30.87"},
		{43, 1, "43"},
		{3, 2, "1.5"},
		{2, 3, "1/1.5"},
		{1, 1_000_000_000, "1/1000000000"},
		{5, 5, "1"},
		{0, 0, "1"},
		{0, 7, "0"},
		{7, 0, "∞"},
	} {
		assert.Equal(t, c.want, Ratio(c.a, c.b), "%d/%d", c.a, c.b)
	}
}

// TestCount: one noun, singular for one.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		word string
		want string
	}{
		{0, "response", "0 responses"},
		{1, "response", "1 response"},
		{2, "response", "2 responses"},
		{1, "publish", "1 publish"},
		{3, "publish", "3 publishes"},
		{1, "byte", "1 byte"},
		{1, "NACK", "1 NACK"},
	} {
		assert.Equal(t, c.want, Count(c.n, c.word))
	}
}
