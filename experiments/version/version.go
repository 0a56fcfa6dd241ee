// Package version is `lab version`'s report: what this lab is built from (its module
// version and VCS stamp, from the build info; go-control-plane's module; the Go
// toolchain) and the Envoy binary lab run would start, found as lab run finds it.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/xds-workbench/lab/experiments/envoy"
)

// Modules whose versions `lab version` names.
const (
	gcpModule      = "github.com/envoyproxy/go-control-plane"
	gcpEnvoyModule = "github.com/envoyproxy/go-control-plane/envoy"
)

// Write writes Report(envoyBin) to out.
func Write(out io.Writer, envoyBin string) error {
	if _, err := io.WriteString(out, Report(envoyBin)); err != nil {
		return fmt.Errorf("write the version: %w", err)
	}
	return nil
}

// Report is the report of `lab version` and `lab --version`, one line per part, with the
// Envoy binary envoyBin names ("": envoy.Find's default order).
func Report(envoyBin string) string {
	info, _ := debug.ReadBuildInfo()
	var b strings.Builder
	fmt.Fprintf(&b, "lab:              %s\n", labVersion(info))
	fmt.Fprintf(&b, "go-control-plane: %s\n", gcpVersion(info))
	fmt.Fprintf(&b, "go:               %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "envoy:            %s\n", envoyVersion(envoyBin))
	return b.String()
}

// labVersion is the main module's version and its VCS stamp, when the build has one.
func labVersion(info *debug.BuildInfo) string {
	if info == nil {
		return "(devel) (no build info)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		return v + " (no VCS revision: built without VCS stamping)"
	}
	var parts []string
	parts = append(parts, "revision "+rev)
	if settings["vcs.modified"] == "true" {
		parts = append(parts, "modified")
	}
	if t := settings["vcs.time"]; t != "" {
		parts = append(parts, "committed "+t)
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}

// gcpVersion is go-control-plane's module version, with its envoy API module's.
func gcpVersion(info *debug.BuildInfo) string {
	if info == nil {
		return "unknown (no build info)"
	}
	dep := func(path string) string {
		for _, d := range info.Deps {
			if d.Path == path {
				if d.Replace != nil {
					return d.Version + " => " + d.Replace.Path + " " + d.Replace.Version
				}
				return d.Version
			}
		}
		return ""
	}
	v := dep(gcpModule)
	if v == "" {
		v = "unknown (not in the build info)"
	}
	if api := dep(gcpEnvoyModule); api != "" {
		v += " (envoy API module " + api + ")"
	}
	return v
}

// envoyVersion is the line about the Envoy binary lab run would start.
func envoyVersion(flagValue string) string {
	b, err := envoy.Find(flagValue)
	if err != nil {
		return "not found: " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	// The version line starts with the binary's path, already said.
	line := b.VersionLine
	if i := strings.Index(line, "version:"); i >= 0 {
		line = line[i:]
	}
	return fmt.Sprintf("%s at %s (from %s; %s)", b.Version, b.Path, b.Source, line)
}
