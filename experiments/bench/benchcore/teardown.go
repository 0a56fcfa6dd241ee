package benchcore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/xds-workbench/lab/experiments/session"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
)

// Teardown is what an axis run (on demand, churn) started, ended in one order: its
// Envoy (Member), its session (control plane and recorder), what else it started
// (Also: backends), its xds.log, and the listener port it reserved. Nil and zero parts
// were never started.
type Teardown struct {
	Member  *Member
	Session *session.Session
	Also    []func(context.Context) error
	Log     *os.File
	LogName string
	Port    int
}

// Close ends every part, within a deadline long enough for a SotW Envoy of clusters
// to exit (StopGrace), and joins what failed.
func (t Teardown) Close(mode protocol.Mode, clusters int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second+StopGrace(mode, clusters))
	defer cancel()
	var errs []error
	if t.Member != nil {
		errs = append(errs, t.Member.Stop(ctx))
	}
	if t.Session != nil {
		errs = append(errs, t.Session.Close(ctx))
	}
	for _, stop := range t.Also {
		errs = append(errs, stop(ctx))
	}
	if t.Log != nil {
		if err := t.Log.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", t.LogName, err))
		}
	}
	if t.Port != 0 {
		loopback.Release(t.Port)
	}
	return errors.Join(errs...)
}
