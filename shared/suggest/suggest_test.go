package suggest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"mode", "mode", 0},
		{"mod", "mode", 1},
		{"teachnig", "teaching", 2},
		{"serv", "serve", 1},
		{"kitten", "sitting", 3},
		{"ünï", "uni", 2},
	} {
		assert.Equal(t, c.want, Distance(c.a, c.b), "%q %q", c.a, c.b)
		assert.Equal(t, c.want, Distance(c.b, c.a), "symmetric: %q %q", c.b, c.a)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"mode", "node-id", "cache", "client"}
	for _, c := range []struct {
		word, want string
		ok         bool
	}{
		{"mod", "mode", true},
		{"moed", "mode", true},   // a transposition is two edits
		{"cahce", "cache", true}, // likewise
		{"clients", "client", true},
		{"mode", "", false},     // a known name needs no suggestion
		{"listener", "", false}, // nothing within two edits
		{"xyz", "", false},
		{"", "", false},
	} {
		got, ok := Closest(c.word, names)
		assert.Equal(t, c.ok, ok, c.word)
		assert.Equal(t, c.want, got, c.word)
	}
	got, ok := Closest("nod", []string{"node", "mode"})
	assert.True(t, ok)
	assert.Equal(t, "node", got, "a tie goes to the first candidate")
}

func TestHint(t *testing.T) {
	assert.Equal(t, "; did you mean --mode?", Hint("mod", []string{"mode"}, "--"))
	assert.Equal(t, "; did you mean teaching?", Hint("teachnig", []string{"teaching", "warming-order"}, ""))
	assert.Empty(t, Hint("quux", []string{"teaching"}, ""))
}

func TestOrList(t *testing.T) {
	for want, v := range map[string][]string{"": nil, "a": {"a"}, "a or b": {"a", "b"}, "a, b or c": {"a", "b", "c"}} {
		if got := OrList(v); got != want {
			t.Errorf("OrList(%q) = %q, want %q", v, got, want)
		}
	}
}
