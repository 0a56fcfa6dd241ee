package benchcore

import "fmt"

// EnvoyExit is how one Envoy exited when the bench stopped it.
type EnvoyExit struct {
	// MS is from /quitquitquit to the process gone.
	MS float64 `json:"ms"`
	// KilledInTeardown: a SotW Envoy had begun to shut down, was still tearing down at
	// the end of its grace and SIGTERM, and was killed (MS is then when it was killed).
	KilledInTeardown bool `json:"killed_in_teardown,omitempty"`
	// GRPC: a grpc-go client process (--client grpc), stopped by SIGTERM; killed when
	// still running after its grace (KilledInTeardown).
	GRPC bool `json:"grpc,omitempty"`
}

// String says how an Envoy exited: "12.3 s", or that it was killed in its teardown.
func (x EnvoyExit) String() string {
	if x.GRPC {
		if x.KilledInTeardown {
			return fmt.Sprintf("killed after %.1f s: still running after SIGTERM and its grace", x.MS/1000)
		}
		return fmt.Sprintf("gone %.1f s after SIGTERM", x.MS/1000)
	}
	if x.KilledInTeardown {
		return fmt.Sprintf("killed after %.1f s, still in its SotW teardown", x.MS/1000)
	}
	return fmt.Sprintf("gone %.1f s after /quitquitquit", x.MS/1000)
}
