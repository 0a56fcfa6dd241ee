package runner

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/xds-workbench/lab/shared/option"
)

// mergeConfigYAML merges over, then extra (extra wins), into one --config-yaml for Envoy,
// which takes the flag once: the scenario's bootstrap override and --config-yaml. Maps
// merge key by key; anything else is replaced.
func mergeConfigYAML(base, extra string) (string, error) {
	if extra == "" {
		return base, nil
	}
	var a, b map[string]any
	if base != "" {
		if err := yaml.Unmarshal([]byte(base), &a); err != nil {
			return "", fmt.Errorf("scenario bootstrap: %w", err)
		}
	}
	if err := yaml.Unmarshal([]byte(extra), &b); err != nil || b == nil {
		return "", &option.Error{Option: OptionConfigYAML, Err: errors.New("must be a YAML mapping merged over Envoy's bootstrap")}
	}
	out, err := yaml.Marshal(mergeMaps(a, b))
	if err != nil {
		return "", &option.Error{Option: OptionConfigYAML, Err: fmt.Errorf("merge: %w", err)}
	}
	return string(out), nil
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		am, aok := out[k].(map[string]any)
		bm, bok := v.(map[string]any)
		if aok && bok {
			out[k] = mergeMaps(am, bm)
		} else {
			out[k] = v
		}
	}
	return out
}
