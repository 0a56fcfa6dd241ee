package option

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestErrorNamesOptionValueAndReason(t *testing.T) {
	t.Parallel()
	rule := errors.New("needs the snapshot cache")
	withValue := &Error{Option: "sotw versions", Value: "uniform", Err: rule}
	assert.EqualError(t, withValue, "sotw versions uniform: needs the snapshot cache")
	assert.ErrorIs(t, withValue, rule, "the rule stays matchable")
	assert.EqualError(t, &Error{Option: "config yaml", Err: rule}, "config yaml: needs the snapshot cache", "no value, no double space")
	var target *Error
	assert.True(t, errors.As(error(withValue), &target))
	assert.EqualError(t, &Error{Option: "repeat", Value: "0", Err: &RangeError{Min: 1, Max: 1000}}, "repeat 0: outside 1-1000")
}

func TestDurationRangeReadsShort(t *testing.T) {
	t.Parallel()
	r := DurationRange{Min: time.Second, Max: 24 * time.Hour}
	assert.Equal(t, "1s-24h", r.String())
	assert.NoError(t, r.Check(time.Minute))
	assert.EqualError(t, r.Check(10*time.Millisecond), "outside 1s-24h")
	for d, want := range map[time.Duration]string{0: "0", time.Hour: "1h", 10 * time.Minute: "10m", 90 * time.Second: "1m30s", 45 * time.Second: "45s"} {
		assert.Equal(t, want, ShortDuration(d))
	}
}
