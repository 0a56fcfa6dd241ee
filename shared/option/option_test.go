package option

import (
	"errors"
	"testing"

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
