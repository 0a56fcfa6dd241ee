package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// What a stream owes of a published type: everything under a wildcard or before it
// asked, only what it names otherwise, nothing once it names nothing.
func TestOwedResources(t *testing.T) {
	published := resources.ListOf(resources.Resource{Name: "blue"}, resources.Resource{Name: "inventory"})
	names := func(rs []resources.Resource) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	for name, tc := range map[string]struct {
		st   xdslog.TypeStatus
		want []string
	}{
		"wildcard (Envoy's CDS)":       {xdslog.TypeStatus{State: xdslog.TypeSynced, Wildcard: true}, []string{"blue", "inventory"}},
		"never asked":                  {xdslog.TypeStatus{}, []string{"blue", "inventory"}},
		"named, narrowed (grpc-go)":    {xdslog.TypeStatus{State: xdslog.TypeNotSent, Names: []string{"blue"}}, []string{"blue"}},
		"named, one not published yet": {xdslog.TypeStatus{State: xdslog.TypeSynced, Names: []string{"green", "inventory"}}, []string{"inventory"}},
		"unsubscribed from all":        {xdslog.TypeStatus{State: xdslog.TypeSynced}, []string{}},
	} {
		assert.Equal(t, tc.want, names(owedResources(published, tc.st)), name)
	}
}
