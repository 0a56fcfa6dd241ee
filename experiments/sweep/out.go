package sweep

import (
	"path/filepath"
	"time"

	"github.com/xds-workbench/lab/shared/option"
)

// OutDir is where a sweep writes: out, or by default experiments/evidence/sweep/<UTC
// time>. Each run appends to its directory's logs, so a second sweep into the same place
// would mix two runs' evidence: a directory that holds anything is refused
// (option.CheckOutEmpty).
func OutDir(out string) (string, error) {
	if out == "" {
		out = filepath.Join("experiments", "evidence", "sweep", time.Now().UTC().Format("20060102T150405Z"))
	}
	return out, option.CheckOutEmpty(out)
}
