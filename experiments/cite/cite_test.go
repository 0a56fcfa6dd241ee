package cite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSectionsAreTheDocumentsHeadings(t *testing.T) {
	s := Sections()
	require.GreaterOrEqual(t, len(s), 30)
	for _, title := range []string{"Grouping Resources into Responses", "Deleting Resources", "Incremental xDS",
		"RPC Services and Methods for Each Variant", "When to send an update", "TTL", "Resource warming"} {
		assert.True(t, IsSection(title), title)
	}
	// Near misses are not sections: case matters, and "Reconnect" is no heading.
	for _, title := range []string{"Resource Warming", "Reconnect", "ACK/NACK", ""} {
		assert.False(t, IsSection(title), title)
	}
	// Sections returns a copy: the list cannot be changed from outside.
	s[0] = "changed"
	assert.NotEqual(t, "changed", Sections()[0])
}

func TestSourceString(t *testing.T) {
	p := Source{Kind: Protocol, Section: "Deleting Resources", Says: "delta: removed_resources"}
	assert.Equal(t, `xDS protocol, "Deleting Resources": delta: removed_resources`, p.String())
	c := Source{Kind: GoControlPlane, Who: "go-control-plane SnapshotCache", File: "pkg/cache/v3/simple.go",
		Func: "CreateWatch", Says: "answers every new stream"}
	assert.Equal(t, "go-control-plane SnapshotCache (pkg/cache/v3/simple.go, CreateWatch) answers every new stream", c.String())
	assert.Equal(t, p.String()+"; "+c.String(), Join([]Source{p, c}))
	assert.True(t, HasProtocol([]Source{c, p}))
	assert.False(t, HasProtocol([]Source{c}))
}

func TestSourceCheck(t *testing.T) {
	ok := []Source{
		{Kind: Protocol, Section: "Incremental xDS"},
		{Kind: Envoy, Who: "Envoy", File: "source/common/router/vhds.cc", Func: "VhdsSubscription::createVhdsSubscription"},
	}
	for _, s := range ok {
		assert.NoError(t, s.Check(), s.String())
	}
	bad := map[string]struct {
		src  Source
		want error
	}{
		"no section":      {Source{Kind: Protocol}, ErrNoSection},
		"planted section": {Source{Kind: Protocol, Section: "Reconnect"}, ErrNotASection},
		"wrong case":      {Source{Kind: Protocol, Section: "Resource Warming"}, ErrNotASection},
		"no kind":         {Source{Section: "TTL"}, ErrNoKind},
		"no function":     {Source{Kind: Envoy, Who: "Envoy", File: "vhds.cc"}, ErrNoPlace},
	}
	for name, c := range bad {
		assert.ErrorIs(t, c.src.Check(), c.want, name)
	}
	// A component's note that miscites the protocol fails too.
	inner := Source{Kind: Workbench, Who: "--nack-policy", File: "sotw/sotw.go", Func: "onRequest",
		Says: `parks the watch (xDS protocol, "NACK handling")`}
	assert.ErrorContains(t, inner.Check(), `"NACK handling" is not a section title`)
}

func TestCheckText(t *testing.T) {
	good := []string{
		`plain prose about the xDS protocol document and xDS protocols`,
		`(xDS protocol, "Deleting Resources")`,
		"(xDS protocol, \"How the client specifies\n   what resources to return\")",
		`xDS protocol, "Grouping Resources into Responses" and "Deleting Resources"`,
		`xDS protocol, "ACK", "NACK" and "TTL"`,
		`the xDS protocol's own wording`,
		`xDS protocol, “Incremental xDS”`,
	}
	for _, s := range good {
		assert.Empty(t, CheckText(s), s)
	}
	bad := map[string]string{
		`see xDS protocol, "Reconnect" (incremental)`:               `"Reconnect" is not a section title`,
		`xDS protocol: Resource Warming |`:                          "write a protocol citation as",
		`the xDS protocol's "ACK/NACK and resource type instance"`:  "write a protocol citation as",
		`xDS protocol: "Deleting Resources"`:                        "write a protocol citation as",
		`xDS protocol, "Deleting Resources" and "Resource Warming"`: `"Resource Warming" is not a section title`,
	}
	for s, want := range bad {
		p := CheckText(s)
		if assert.Len(t, p, 1, s) {
			assert.Contains(t, p[0].Err, want, s)
		}
	}
	// The line is where the citation starts.
	p := CheckText("one\ntwo\nthree (xDS protocol,\n\"Reconnect\")\n")
	require.Len(t, p, 1)
	assert.Equal(t, 3, p[0].Line)
}

// Every source of the registry cites something real, and none is defined twice.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All() {
		assert.NoError(t, s.Check(), s.String())
		assert.False(t, seen[s.String()], "defined twice: %s", s)
		seen[s.String()] = true
	}
}
