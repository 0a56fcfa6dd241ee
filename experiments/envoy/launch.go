package envoy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/shared/protocol"
)

// Bootstrap names the workbench bootstrap Envoy runs from: the mode's template rendered
// with Params (bootstrap.Render), written to Path.
type Bootstrap struct {
	// Mode is the xDS protocol (sotw or delta), which picks the template.
	Mode   protocol.Mode
	Params bootstrap.Params
	// Path is where the rendered bootstrap is written; Envoy's -c.
	Path string
}

// Launcher starts Envoy from one rendered bootstrap: the render, write, start sequence
// `lab run`, `lab serve` and `lab bench` share, with the render and the write done once
// so that a restarted Envoy reads the very file the first one did.
type Launcher struct {
	opts Options
}

// NewLauncher renders b and writes it to b.Path. opts say how Envoy runs; its ConfigPath
// is b.Path.
func NewLauncher(b Bootstrap, opts Options) (*Launcher, error) {
	if err := WriteBootstrap(b); err != nil {
		return nil, err
	}
	opts.ConfigPath = b.Path
	return &Launcher{opts: opts}, nil
}

// Start starts Envoy on the bootstrap (Start); again after a Stop, for a restart.
func (l *Launcher) Start(ctx context.Context) (*Process, error) { return Start(ctx, l.opts) }

// Launch renders and writes b, then starts Envoy on it: NewLauncher and Start, for an
// Envoy started once.
func Launch(ctx context.Context, b Bootstrap, opts Options) (*Process, error) {
	l, err := NewLauncher(b, opts)
	if err != nil {
		return nil, err
	}
	return l.Start(ctx)
}

// WriteBootstrap renders b and writes it to b.Path, atomically (a temporary file renamed
// over it), so that an Envoy never reads half a bootstrap and an interrupted run leaves
// none.
func WriteBootstrap(b Bootstrap) error {
	cfg, err := bootstrap.Render(b.Mode, b.Params)
	if err != nil {
		return fmt.Errorf("render %s bootstrap: %w", b.Mode, err)
	}
	if err := writeAtomic(b.Path, cfg); err != nil {
		return fmt.Errorf("write bootstrap: %w", err)
	}
	return nil
}

// writeAtomic writes data to a temporary file next to path, readable by all (0644, as
// os.WriteFile would leave it), and renames it to path.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
