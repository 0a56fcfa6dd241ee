package inventory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/xds-workbench/lab/shared/option"
)

// The options a refusal of Serve names (option.Error.Option); cmd/lab maps them to its flags.
const (
	OptionDelay       = "delay"
	OptionIdleTimeout = "idle timeout"
)

// Serve is `lab inventory`: the backend name on port (0: a free one), saying where on out,
// until ctx ends or the backend fails; then it stops gracefully. The behaviour is checked
// first: a delay within 0-MaxDelay, an idle timeout not negative.
func Serve(ctx context.Context, name string, port int, logPath string, bh Behaviour, out io.Writer) error {
	if bh.Delay < 0 || bh.Delay > MaxDelay {
		return &option.Error{Option: OptionDelay, Value: bh.Delay.String(), Err: fmt.Errorf("outside 0s-%s", MaxDelay)}
	}
	if bh.IdleTimeout < 0 {
		return &option.Error{Option: OptionIdleTimeout, Value: bh.IdleTimeout.String(), Err: errors.New("must not be negative")}
	}
	b, err := StartWith(name, port, logPath, bh)
	if err != nil {
		return err
	}
	where := "no request log"
	if logPath != "" {
		where = "log " + logPath
	}
	fmt.Fprintf(out, "inventory %s listening on http://%s%s (%s)\n", b.Name(), b.Addr(), QuotePath, where)
	select {
	case <-ctx.Done():
	case <-b.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Stop(stopCtx); err != nil {
		return err
	}
	return b.Err()
}
