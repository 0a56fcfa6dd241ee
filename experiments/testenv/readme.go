package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// READMEBlocks returns the repository README's fenced code blocks of one language (""
// for a bare fence), each as its lines: the tests that keep the README's commands and
// sessions true read them here. The README is found above the working directory, beside
// go.mod.
func READMEBlocks(t testing.TB, lang string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatalf("read the README: %v", err)
	}
	var (
		out   [][]string
		cur   []string
		in    bool
		taken bool
	)
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case !in && strings.HasPrefix(l, "```"):
			in, taken, cur = true, strings.TrimPrefix(l, "```") == lang, nil
		case in && l == "```":
			in = false
			if taken {
				out = append(out, cur)
			}
		case in:
			cur = append(cur, l)
		}
	}
	return out
}

// moduleRoot is the nearest directory at or above the working directory with a go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("working directory: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the working directory")
		}
		dir = parent
	}
}
