// Package cite is the workbench's one registry of where a behaviour comes from: a
// section of the xDS protocol document, or a named component (Envoy, go-control-plane,
// grpc-go, the workbench itself) with the file and function that do it. The compare
// reports label every finding "protocol" only with a Protocol source whose section is in
// Sections; the docs use the same citation form, `xDS protocol, "<section title>"`, and
// CheckText (run by `make lint` over README.md and docs/*.md) rejects any other form or
// a title that is not a heading of the document.
//
// The section titles are in xds_protocol_sections.txt with the revision they were read
// at: titles are facts, and keeping them in the repository makes a miscited section a
// failing check rather than a reviewer's catch.
package cite

import (
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kind is whose behaviour a source describes.
type Kind string

const (
	// Protocol is a section of envoyproxy/envoy docs/root/api-docs/xds_protocol.rst.
	Protocol Kind = "protocol"
	// Envoy is Envoy's source (envoyproxy/envoy) or its configuration docs.
	Envoy Kind = "envoy"
	// GoControlPlane is go-control-plane v0.14.0 (envoyproxy/go-control-plane).
	GoControlPlane Kind = "go-control-plane"
	// GRPCGo is grpc-go v1.85.0's xDS client (grpc/grpc-go).
	GRPCGo Kind = "grpc-go"
	// Workbench is this repository: an option, a cache or a front end of its own.
	Workbench Kind = "workbench"
)

// Source is one place a behaviour is written down. A Protocol source names a Section;
// every other kind names Who (the component as a reader knows it), the File it is in
// (a path in that component's repository, or this one's) and the Func that does it.
// Says is what the place says or does, as one clause.
type Source struct {
	Kind    Kind
	Section string
	Who     string
	File    string
	Func    string
	Says    string
}

// String is the source as the reports print it: `xDS protocol, "Title": says` for a
// section, `Who (File, Func) says` for a component.
func (s Source) String() string {
	if s.Kind == Protocol {
		if s.Says == "" {
			return fmt.Sprintf("xDS protocol, %q", s.Section)
		}
		return fmt.Sprintf("xDS protocol, %q: %s", s.Section, s.Says)
	}
	where := s.File
	if s.Func != "" {
		where += ", " + s.Func
	}
	out := s.Who
	if where != "" {
		out += " (" + where + ")"
	}
	if s.Says != "" {
		out += " " + s.Says
	}
	return out
}

// Errors of Check.
var (
	ErrNoSection   = errors.New("a protocol source names no section")
	ErrNotASection = errors.New("not a section title of xds_protocol.rst")
	ErrNoKind      = errors.New("a source has no kind")
	ErrNoPlace     = errors.New("a component source names no component, file or function")
)

// Check says whether the source cites something real: a Protocol source a section in
// Sections, any other source its component, file and function. The citations inside
// Says are checked too (CheckText), so a component's note cannot miscite the protocol.
func (s Source) Check() error {
	switch {
	case s.Kind == "":
		return fmt.Errorf("%w: %q", ErrNoKind, s.String())
	case s.Kind == Protocol && s.Section == "":
		return ErrNoSection
	case s.Kind == Protocol && !IsSection(s.Section):
		return fmt.Errorf("%w: %q", ErrNotASection, s.Section)
	case s.Kind != Protocol && (s.Who == "" || s.File == "" || s.Func == ""):
		return fmt.Errorf("%w: %q", ErrNoPlace, s.String())
	}
	if p := CheckText(s.Says); len(p) > 0 {
		return fmt.Errorf("%s: %s", s.String(), p[0].Err)
	}
	return nil
}

// Join is the sources as one line, "; " between them (a report's source field).
func Join(srcs []Source) string {
	parts := make([]string, 0, len(srcs))
	for _, s := range srcs {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, "; ")
}

// HasProtocol reports whether any of srcs is a Protocol source.
func HasProtocol(srcs []Source) bool {
	return slices.ContainsFunc(srcs, func(s Source) bool { return s.Kind == Protocol })
}

//go:embed xds_protocol_sections.txt
var sectionsFile string

// sections are the titles of xds_protocol_sections.txt, in document order.
var sections = parseSections(sectionsFile)

func parseSections(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// Sections are the protocol document's section titles, in document order.
func Sections() []string { return slices.Clone(sections) }

// IsSection reports whether title is a section title of the protocol document, spelt
// exactly as its heading is.
func IsSection(title string) bool { return slices.Contains(sections, title) }
