package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// RunAndPrint is `lab sweep`: Run, then its table on out and in sweep.txt beside
// sweep.json, also when interrupted (what was measured is kept).
func RunAndPrint(ctx context.Context, o Options, out io.Writer) error {
	rep, err := Run(ctx, o)
	if rep == nil {
		return err
	}
	var table strings.Builder
	Render(&table, rep)
	fmt.Fprint(out, table.String())
	fmt.Fprintf(out, "report: %s (the table: sweep.txt)\n", filepath.Join(o.Out, "sweep.json"))
	if werr := os.WriteFile(filepath.Join(o.Out, "sweep.txt"), []byte(table.String()), 0o644); werr != nil {
		return errors.Join(err, fmt.Errorf("write sweep.txt: %w", werr))
	}
	return err
}
