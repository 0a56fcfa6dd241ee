package childproc

import (
	"bytes"
	"context"
	"fmt"
)

// Output runs a short command (go build, go list, envoy --version) to completion and
// returns what it wrote on stdout and on stderr. It is started as every child is (see
// Start), so a killed workbench leaves no `go build` behind; when ctx ends first, its
// whole process group is killed and err wraps ctx's error.
func Output(ctx context.Context, name string, args ...string) (stdout, stderr []byte, err error) {
	return OutputIn(ctx, "", name, args...)
}

// OutputIn is Output run in directory dir ("": this process's working directory).
func OutputIn(ctx context.Context, dir, name string, args ...string) (stdout, stderr []byte, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	cmd := Command(name, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	p, err := Start(cmd)
	if err != nil {
		return nil, nil, err
	}
	select {
	case <-p.Exited():
	case <-ctx.Done():
		_ = p.killGroup()
		<-p.Exited()
		return out.Bytes(), errOut.Bytes(), fmt.Errorf("%s: %w", name, ctx.Err())
	}
	// Exited is closed after Wait, which has copied all output into the buffers.
	return out.Bytes(), errOut.Bytes(), p.ExitErr()
}
