package protocol

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    Mode
		wantErr string
	}{
		{"sotw", SotW, ""},
		{"delta", Delta, ""},
		{"", "", `unknown mode "" (want sotw or delta)`},
		{"SotW", "", `unknown mode "SotW" (want sotw or delta)`},
		{"ads", "", `unknown mode "ads" (want sotw or delta)`},
	} {
		got, err := ParseMode(c.in)
		if c.wantErr == "" {
			if err != nil || got != c.want {
				t.Errorf("ParseMode(%q) = %q, %v; want %q, nil", c.in, got, err, c.want)
			}
			continue
		}
		var unknown *UnknownModeError
		if err == nil || err.Error() != c.wantErr || !errors.As(err, &unknown) || unknown.Mode != c.in {
			t.Errorf("ParseMode(%q) error = %v, want %s", c.in, err, c.wantErr)
		}
		if got != "" {
			t.Errorf("ParseMode(%q) = %q with an error, want the zero Mode", c.in, got)
		}
	}
}

// TestModeIsAStringOnTheWire: a Mode encodes as its name, so xds.log and summary.json
// are unchanged by the type.
func TestModeIsAStringOnTheWire(t *testing.T) {
	b, err := json.Marshal(struct {
		Mode Mode `json:"mode"`
	}{Delta})
	if err != nil || string(b) != `{"mode":"delta"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var back struct {
		Mode Mode `json:"mode"`
	}
	if err := json.Unmarshal(b, &back); err != nil || back.Mode != Delta || back.Mode.String() != "delta" {
		t.Fatalf("Unmarshal = %+v, %v", back, err)
	}
}
