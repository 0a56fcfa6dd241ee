package envoy

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/xds-workbench/lab/shared/option"
)

// DefaultDrainTime is Envoy's own drain time when --drain-time-s is not given
// (source/server/options_impl.cc: drain_time_s, default 600).
const DefaultDrainTime = 600 * time.Second

// OptionDrainTime names the drain time in DrainTimeArgs' option.Error.
const OptionDrainTime = "drain time"

// DrainTimeArgs checks d and returns the arguments that give it to Envoy. Envoy's drain
// time (how long a listener replaced by a full update or removed, or a filter chain
// replaced in place, drains before its connections close) is a command-line flag,
// --drain-time-s, whole seconds as a uint32; the bootstrap cannot set it
// (source/server/options_impl.cc, drain_time_s; server_info.proto shows it read-only as
// CommandLineOptions.drain_time). 0 gives no arguments: Envoy's DefaultDrainTime. A
// refusal is an *option.Error naming OptionDrainTime.
func DrainTimeArgs(d time.Duration) ([]string, error) {
	var reason error
	switch {
	case d < 0:
		reason = errors.New("must not be negative")
	case d%time.Second != 0:
		reason = errors.New("not whole seconds (Envoy's --drain-time-s takes seconds)")
	case d/time.Second > math.MaxUint32:
		reason = errors.New("more than Envoy's --drain-time-s can take")
	case d == 0:
		return nil, nil
	default:
		return []string{"--drain-time-s", strconv.FormatInt(int64(d/time.Second), 10)}, nil
	}
	return nil, &option.Error{Option: OptionDrainTime, Value: d.String(), Err: reason}
}
