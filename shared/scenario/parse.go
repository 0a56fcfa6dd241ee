package scenario

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xds-workbench/lab/shared/suggest"
)

// Bounds of the durations a file may ask for.
const (
	MaxDown      = 60 * time.Second
	MaxWait      = 60 * time.Second
	MinEvery     = time.Millisecond
	MaxEvery     = time.Second
	DefaultEvery = 10 * time.Millisecond
	// MinDrainTime and MaxDrainTime bound drain_time (Envoy's --drain-time-s).
	MinDrainTime = time.Second
	MaxDrainTime = 10 * time.Minute
	// MaxBurst bounds the changes of one burst.
	MaxBurst = 1000
	// MaxFileBytes bounds a scenario file.
	MaxFileBytes = 1 << 20
)

// ParseFile reads and parses one scenario file.
func ParseFile(path string) (*Scenario, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a scenario file may have", path, st.Size(), MaxFileBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, b)
}

// Parse parses and checks a scenario file. file names it in errors, which read
// "file:line: what is wrong". Nothing in the file is used before all of it is valid.
func Parse(file string, data []byte) (*Scenario, error) {
	p := &parser{file: file}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, p.yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.errf(&extra, "more than one YAML document")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty scenario file", file)
	}
	sc, err := p.scenario(doc.Content[0])
	if err != nil {
		return nil, err
	}
	sc.File = file
	return sc, nil
}

type parser struct {
	file string
	sc   *Scenario
	// tlsRefs are the secrets the TLS listeners name, checked against the scenario's
	// secrets once every resource is read (checkSecretRefs).
	tlsRefs []tlsRef
}

// Error is a problem in a scenario file, at a line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlParserProblems are the problems go.yaml.in/yaml/v3's parser (parserc.go, as
// opposed to its scanner) reports. For these the library prints its 0-based mark as the
// line (decode.go, parser.fail, adds one for scanner errors only), so an unclosed "[a, b"
// on line 3 reads "line 2": yamlError adds the missing one.
var yamlParserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"found undefined tag handle",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

func (p *parser) yamlError(err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		if slices.Contains(yamlParserProblems, m[2]) {
			line++
		}
		return &Error{File: p.file, Line: line, Msg: m[2]}
	}
	return fmt.Errorf("%s: %s", p.file, strings.TrimPrefix(err.Error(), "yaml: "))
}

// fields is one YAML mapping being read: every key must be read by name, so done can
// name the first unknown one.
type fields struct {
	p    *parser
	n    *yaml.Node
	what string
	keys map[string]*yaml.Node // key -> value
	key  map[string]*yaml.Node // key -> key node (for its line)
	used map[string]bool
	// known is every key the reader asked about, for the unknown-field error.
	known map[string]bool
}

func (p *parser) fields(n *yaml.Node, what string) (*fields, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "%s must be a mapping", what)
	}
	f := &fields{p: p, n: n, what: what, keys: map[string]*yaml.Node{}, key: map[string]*yaml.Node{}, used: map[string]bool{}, known: map[string]bool{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if _, dup := f.keys[k]; dup {
			return nil, p.errf(n.Content[i], "%s: %q is given twice", what, k)
		}
		f.keys[k], f.key[k] = n.Content[i+1], n.Content[i]
	}
	return f, nil
}

func (f *fields) get(k string) *yaml.Node {
	f.used[k], f.known[k] = true, true
	return f.keys[k]
}

func (f *fields) has(k string) bool {
	f.known[k] = true
	return f.keys[k] != nil
}

// done fails on the first key that was not read.
func (f *fields) done() error {
	for i := 0; i < len(f.n.Content); i += 2 {
		if !f.used[f.n.Content[i].Value] {
			return f.unknown(f.n.Content[i])
		}
	}
	return nil
}

// only refuses, before anything is read, a key that is none of keys: a misspelled key
// (backend: for backends:) is named as unknown, rather than its absence reported as
// whatever it leaves missing. done still checks that every key was read.
func (f *fields) only(keys ...string) error {
	for _, k := range keys {
		f.known[k] = true
	}
	for i := 0; i < len(f.n.Content); i += 2 {
		if !f.known[f.n.Content[i].Value] {
			return f.unknown(f.n.Content[i])
		}
	}
	return nil
}

// unknown is the error for key, with the known key nearest to it (shared/suggest).
func (f *fields) unknown(key *yaml.Node) error {
	known := make([]string, 0, len(f.known))
	for u := range f.known {
		known = append(known, u)
	}
	slices.Sort(known)
	return f.p.errf(key, "unknown field %q in %s%s (known: %s)", key.Value, f.what, suggest.Hint(key.Value, known, ""), strings.Join(known, ", "))
}

func (f *fields) str(k string, required bool) (string, error) {
	n := f.get(k)
	if n == nil {
		if required {
			return "", f.p.errf(f.n, "%s: %q is required", f.what, k)
		}
		return "", nil
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", f.p.errf(n, "%s: %q must be a string", f.what, k)
	}
	return n.Value, nil
}

func (f *fields) integer(k string, lo, hi int) (int, bool, error) {
	n := f.get(k)
	if n == nil {
		return 0, false, nil
	}
	v, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return 0, false, f.p.errf(n, "%s: %q must be a whole number", f.what, k)
	}
	if v < lo || v > hi {
		return 0, false, f.p.errf(n, "%s: %q is %d, outside %d..%d", f.what, k, v, lo, hi)
	}
	return v, true, nil
}

func (f *fields) boolean(k string) (*bool, error) {
	n := f.get(k)
	if n == nil {
		return nil, nil
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		return nil, f.p.errf(n, "%s: %q must be true or false", f.what, k)
	}
	return &b, nil
}

func (f *fields) duration(k string, lo, hi, def time.Duration) (time.Duration, error) {
	n := f.get(k)
	if n == nil {
		return def, nil
	}
	return f.p.duration(n, f.what+": "+strconv.Quote(k), lo, hi)
}

func (p *parser) duration(n *yaml.Node, what string, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return 0, p.errf(n, "%s must be a duration such as 500ms or 2s, not %q", what, n.Value)
	}
	if d < lo || d > hi {
		return 0, p.errf(n, "%s is %s, outside %s..%s", what, d, lo, hi)
	}
	return d, nil
}

// strings reads a list of strings; a single string counts as a list of one.
func (f *fields) strings(k string) ([]string, error) {
	n := f.get(k)
	if n == nil {
		return nil, nil
	}
	return f.p.stringList(n, f.what+": "+strconv.Quote(k))
}

func (p *parser) stringList(n *yaml.Node, what string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "%s must be a list of strings", what)
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode {
			return nil, p.errf(c, "%s must be a list of strings", what)
		}
		out = append(out, c.Value)
	}
	return out, nil
}

// list returns the items of a sequence (nil when absent).
func (f *fields) list(k string) ([]*yaml.Node, error) {
	n := f.get(k)
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, f.p.errf(n, "%s: %q must be a list", f.what, k)
	}
	return n.Content, nil
}
