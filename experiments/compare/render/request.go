package render

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/compare"
)

// Request is what `lab compare` was asked: Write does the work from it alone.
type Request struct {
	// Runs are the RUN arguments in command-line order, labelled A, B, C, ...: run
	// directories, xds.log files, or folders of runs (FolderRuns).
	Runs   []string
	Format string
	// Out is the report's file ("": Stdout).
	Out string
	// Step is a shared step's name, or NoStep for the events before the first.
	Step string
	// Width bounds the text tables: a wider one is split into stacked tables, each
	// repeating the step column (0: never split).
	Width int
	// SessionA and SessionB choose a session of RUN_A's and RUN_B's xds.log (0: it must
	// hold one).
	SessionA, SessionB int
	// Scale is a scale sweep's bench.json (scale.json) to show beside the runs ("": the
	// first folder of runs' scale.json, if any).
	Scale string
	// FolderOrder names the runs a folder of runs lists first, in this order (make lab's
	// configurations, mainjob.Configs); the others follow by name.
	FolderOrder    []string
	Stdout, Stderr io.Writer
	// Usage is the command's usage line, for a refusal of too few runs.
	Usage string
}

// Write loads the runs, compares them (two: the two-run report; more: the matrix) and
// writes the report. Nothing is written unless every run loads and compares; which runs
// a folder stood for, and a run given twice, are said on Stderr.
func Write(r Request) error {
	if r.Scale == "" {
		r.Scale = r.folderScale()
	}
	paths, folders, err := r.expandRunFolders()
	if err != nil {
		return err
	}
	r.Runs = paths
	switch {
	case len(r.Runs) < 2:
		return fmt.Errorf("want two or more runs, got %d (usage: lab %s)", len(r.Runs), r.Usage)
	case len(r.Runs) > compare.MaxRuns:
		return fmt.Errorf("want at most %d runs, got %d", compare.MaxRuns, len(r.Runs))
	}
	runs := make([]*compare.Run, len(r.Runs))
	for i, path := range r.Runs {
		if runs[i], err = compare.LoadSession(compare.RunLabel(i), path, r.session(i)); err != nil {
			return err
		}
	}
	// After loading: a log of several sessions given twice without --session-a/-b is
	// better told how to choose them than that it was given twice.
	same, err := r.checkDistinctRuns(runs)
	if err != nil {
		return err
	}
	buf, err := r.render(runs)
	if err != nil {
		return err
	}
	// Said once the report is ready (nothing is said for a comparison that fails), and
	// on stderr so that the report itself stays what was asked.
	for _, f := range folders {
		fmt.Fprintf(r.Stderr, "lab compare: %s\n", f)
	}
	if same != "" {
		fmt.Fprintf(r.Stderr, "lab compare: warning: A and B are the same run (%s): every difference will be zero\n", same)
	}
	if r.Out == "" {
		_, err := r.Stdout.Write(buf.Bytes())
		return err
	}
	if err := os.WriteFile(r.Out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	fmt.Fprintf(r.Stderr, "wrote %s (%s, %d bytes)\n", r.Out, r.Format, buf.Len())
	return nil
}

// render is the report of runs in r.Format: the two-run report, or the matrix.
func (r *Request) render(runs []*compare.Run) (*bytes.Buffer, error) {
	opt := compare.Options{Step: r.Step}
	if r.Scale != "" {
		var err error
		if opt.Scale, err = compare.LoadScale(r.Scale); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if len(runs) == 2 {
		rep, err := compare.Compare(runs[0], runs[1], opt)
		if err != nil {
			return nil, err
		}
		return &buf, Report(&buf, rep, r.Format, r.Width)
	}
	m, err := compare.CompareMatrix(runs, opt)
	if err != nil {
		return nil, err
	}
	return &buf, Matrix(&buf, m, r.Format, r.Width)
}

// session is the session chosen for the i-th run (0: none chosen).
func (r *Request) session(i int) int {
	switch i {
	case 0:
		return r.SessionA
	case 1:
		return r.SessionB
	}
	return 0
}

// checkDistinctRuns finds a run given twice (the same xds.log, by file identity, so a
// directory and its xds.log, or two spellings of one path, count as one; two sessions of
// one log are two runs). In a matrix it is refused: it would count twice. Two runs that
// are one are compared, since a run beside itself is a fair check of the tool, and same
// names the log for the warning that every difference will be zero.
func (r *Request) checkDistinctRuns(runs []*compare.Run) (same string, err error) {
	infos := make([]fs.FileInfo, len(runs))
	for i, run := range runs {
		fi, err := os.Stat(run.LogPath)
		if err != nil {
			return "", fmt.Errorf("run %s (%s): %w", run.Label, run.Path, err)
		}
		infos[i] = fi
		for j := range i {
			if !os.SameFile(infos[j], fi) || r.session(j) != r.session(i) {
				continue
			}
			if len(runs) == 2 {
				return run.LogPath, nil
			}
			return "", fmt.Errorf("run %s (%s) is run %s (%s) again: give each run once", run.Label, run.Path, runs[j].Label, runs[j].Path)
		}
	}
	return "", nil
}

// expandRunFolders replaces each folder of runs among r.Runs by its runs (FolderRuns),
// and says for each folder which runs it took, with their labels ("FOLDER: 5 runs, in
// make lab's order, then by name: A sotw, B delta, ..."). Other paths are left to
// LoadSession.
func (r *Request) expandRunFolders() (runs, folders []string, err error) {
	for _, p := range r.Runs {
		sub, ok, err := FolderRuns(p, r.FolderOrder)
		switch {
		case err != nil:
			return nil, nil, err
		case !ok:
			runs = append(runs, p)
			continue
		case len(sub) == 0:
			return nil, nil, fmt.Errorf("%s: no xds.log, and no subdirectory with one (want a run directory, an xds.log, or a folder of runs)", p)
		}
		took := make([]string, len(sub))
		for i, s := range sub {
			took[i] = compare.RunLabel(len(runs)+i) + " " + filepath.Base(s)
		}
		folders = append(folders, fmt.Sprintf("%s: %d runs, in make lab's order, then by name: %s", p, len(sub), strings.Join(took, ", ")))
		runs = append(runs, sub...)
	}
	return runs, folders, nil
}

// FolderRuns lists the runs in dir when it is a folder of runs, as make lab writes: a
// directory without an xds.log, whose subdirectories with an xds.log are its runs, those
// named in order first (in that order), the others after them by name. ok is false for
// anything else: a run, a file, a path that does not exist.
func FolderRuns(dir string, order []string) (runs []string, ok bool, err error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, false, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "xds.log")); err == nil {
		return nil, false, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, false, fmt.Errorf("read the folder of runs: %w", err)
	}
	for _, e := range ents {
		sub := filepath.Join(dir, e.Name())
		if fi, err := os.Stat(filepath.Join(sub, "xds.log")); err == nil && fi.Mode().IsRegular() {
			runs = append(runs, sub)
		}
	}
	rank := func(p string) int {
		if i := slices.Index(order, filepath.Base(p)); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(runs, func(a, b string) int { return rank(a) - rank(b) })
	return runs, true, nil
}

// folderScale is the scale.json of the first folder of runs given that has one ("" for
// none): make lab's folder compares with its scale sweep without --scale.
func (r *Request) folderScale() string {
	for _, a := range r.Runs {
		if _, ok, _ := FolderRuns(a, nil); !ok {
			continue
		}
		if fi, err := os.Stat(filepath.Join(a, "scale.json")); err == nil && fi.Mode().IsRegular() {
			return filepath.Join(a, "scale.json")
		}
	}
	return ""
}
