package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xds-workbench/lab/experiments/compare"
)

// FuzzReadLog feeds arbitrary bytes through the whole path `lab compare` takes: read the
// log, summarize it, compare it with a committed run and in a matrix with the LinearCache
// runs, render every format. It must never
// panic; it either fails with a one-line error or renders something. The seed corpus
// (testdata/fuzz/FuzzReadLog) covers truncated lines, wrong field types, unknown events
// and modes, empty input and small valid logs of both modes.
func FuzzReadLog(f *testing.F) {
	good, err := os.ReadFile(filepath.Join(deltaRun, "xds.log"))
	if err != nil {
		f.Fatal(err)
	}
	// A short valid prefix keeps the inline seed small; the corpus files add more.
	f.Add(firstLines(good, 6))
	other, err := compare.Load("B", sotwRun)
	if err != nil {
		f.Fatal(err)
	}
	var linear []*compare.Run
	for i, p := range []string{sotwLinearRun, deltaLinearRun} {
		r, err := compare.Load(compare.RunLabel(2+i), p)
		if err != nil {
			f.Fatal(err)
		}
		linear = append(linear, r)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := compare.FromLog("A", data)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		for _, pair := range [][2]*compare.Run{{a, other}, {a, a}} {
			rep, err := compare.Compare(pair[0], pair[1], compare.Options{})
			if err != nil {
				t.Fatalf("compare of a readable log failed: %v", err)
			}
			for _, format := range Formats {
				var buf bytes.Buffer
				// Narrow: the split tables must hold whatever the log's names are.
				if err := Report(&buf, rep, format, 40); err != nil {
					t.Fatalf("render %s: %v", format, err)
				}
				if buf.Len() == 0 {
					t.Fatalf("render %s: empty output", format)
				}
			}
			// Every step can be selected and diagrammed.
			for _, s := range rep.SharedSteps {
				if _, err := compare.Compare(pair[0], pair[1], compare.Options{Step: s}); err != nil {
					t.Fatalf("step %q: %v", s, err)
				}
			}
		}
		m, err := compare.CompareMatrix(append([]*compare.Run{a, other}, linear...), compare.Options{})
		if err != nil {
			t.Fatalf("matrix of a readable log failed: %v", err)
		}
		for _, format := range Formats {
			var buf bytes.Buffer
			if err := Matrix(&buf, m, format, 40); err != nil {
				t.Fatalf("render matrix %s: %v", format, err)
			}
			if buf.Len() == 0 {
				t.Fatalf("render matrix %s: empty output", format)
			}
		}
	})
}

func firstLines(b []byte, n int) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[:n]
	}
	return bytes.Join(lines, nil)
}
