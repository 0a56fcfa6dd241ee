package progress

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestMark(t *testing.T) {
	assert.Equal(t, "[1/6]", Mark(1, 6))
	assert.Equal(t, "[6/6]", Mark(6, 6))
}

// TestLeft: the rest at the pace of the done items, to the second; nothing before the
// first is done or after the last.
func TestLeft(t *testing.T) {
	for _, c := range []struct {
		elapsed     time.Duration
		done, total int
		want        string
	}{
		{0, 0, 6, ""},
		{10 * time.Second, 1, 6, " (about 50s left)"},
		{40 * time.Second, 2, 6, " (about 1m20s left)"},
		{1500 * time.Millisecond, 3, 4, " (about 1s left)"},
		{time.Hour, 6, 6, ""},
		{time.Second, 7, 6, ""},
	} {
		assert.Equal(t, c.want, Left(c.elapsed, c.done, c.total), "%v %d/%d", c.elapsed, c.done, c.total)
	}
}
