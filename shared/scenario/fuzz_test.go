package scenario

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no input makes Parse panic; a file it accepts has steps and resources that
// build against the placeholder environment.
func FuzzParse(f *testing.F) {
	for _, n := range PackNames() {
		b, err := packFS.ReadFile("pack/" + n + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	bad, _ := filepath.Glob("testdata/bad/*.yaml")
	for _, p := range bad {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if len(sc.Steps) == 0 || sc.Steps[0].Action != Publish {
			t.Fatalf("accepted a scenario without a first publish")
		}
		d := NewDesired(sc)
		env := checkEnv(sc.Backends)
		for _, st := range sc.Steps {
			for _, c := range append([]Change{st.Change}, append(st.Burst, st.Changes...)...) {
				if len(c.Upsert)+len(c.Delete) == 0 {
					continue
				}
				v, err := d.Apply(c)
				if err != nil {
					t.Fatalf("apply a checked change: %v", err)
				}
				_, _ = d.Set(v, env)
			}
		}
	})
}
