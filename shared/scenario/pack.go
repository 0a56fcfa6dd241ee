package scenario

import (
	"embed"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/shared/suggest"
)

// The pack: the built-in scenarios, in the same format as a user's file.
//
//go:embed pack/*.yaml
var packFS embed.FS

// packOrder is the order `lab scenarios` lists them and `--scenario all` runs them.
var packOrder = []string{
	"teaching", "warming-order", "cds-without-eds", "removal-while-disconnected", "resource-does-not-exist",
	"many-per-type", "rapid-publishes", "delta-non-wildcard-removal", "nack-policies", "under-load", "slow-endpoint",
	"on-demand-vhost", "on-demand-cluster", "on-demand-restart", "sds-rotation", "sds-not-ready", "sds-invalid", "secret-removed",
	"sds-superset",
	"listener-drain", "health-check-warming", "cds-ack-held",
}

// Pack parses every built-in scenario, in pack order.
func Pack() ([]*Scenario, error) {
	out := make([]*Scenario, 0, len(packOrder))
	for _, n := range packOrder {
		sc, err := Builtin(n)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// PackNames lists the built-in scenarios.
func PackNames() []string { return slices.Clone(packOrder) }

// BuiltinSource is a built-in scenario's file, as shipped (to copy and change).
func BuiltinSource(name string) ([]byte, error) {
	if !slices.Contains(packOrder, name) {
		return nil, noBuiltin(name, "")
	}
	return packFS.ReadFile(path.Join("pack", name+".yaml"))
}

// Builtin parses one built-in scenario.
func Builtin(name string) (*Scenario, error) {
	b, err := packFS.ReadFile(path.Join("pack", name+".yaml"))
	if err != nil {
		return nil, noBuiltin(name, "")
	}
	sc, err := Parse("builtin:"+name, b)
	if err != nil {
		return nil, err
	}
	if sc.Name != name {
		return nil, fmt.Errorf("builtin:%s: the file names itself %q", name, sc.Name)
	}
	return sc, nil
}

// Load resolves a --scenario value: a built-in name, or a file path (anything with a
// path separator or a .yaml/.yml suffix, or an existing file).
func Load(ref string) (*Scenario, error) {
	if slices.Contains(packOrder, ref) {
		return Builtin(ref)
	}
	if strings.ContainsRune(ref, os.PathSeparator) || strings.HasSuffix(ref, ".yaml") || strings.HasSuffix(ref, ".yml") {
		return ParseFile(ref)
	}
	if _, err := os.Stat(ref); err == nil {
		return ParseFile(ref)
	}
	return nil, noBuiltin(ref, " and no such file")
}

// noBuiltin refuses a name that is no built-in scenario, with the nearest built-in one
// (shared/suggest) and the list.
func noBuiltin(name, also string) error {
	return fmt.Errorf("no built-in scenario %q%s%s (built-in: %s)", name, also, suggest.Hint(name, packOrder, ""), strings.Join(packOrder, ", "))
}

// Select keeps the named steps, in scenario order. An empty list keeps all. Unknown
// names are an error that lists the known ones; the first kept step must publish.
func Select(steps []Step, names []string) ([]Step, error) {
	if len(names) == 0 {
		return steps, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []Step
	for _, s := range steps {
		if want[s.Name] {
			out = append(out, s)
			delete(want, s.Name)
		}
	}
	for _, n := range names { // in the order given, so the error names the first unknown
		if want[n] {
			return nil, fmt.Errorf("unknown step %q%s (known: %s)", n, suggest.Hint(n, Names(steps), ""), strings.Join(Names(steps), ", "))
		}
	}
	if len(out) == 0 || out[0].Action != Publish {
		return nil, fmt.Errorf("the first selected step must publish a state (start with %q)", steps[0].Name)
	}
	return out, nil
}
