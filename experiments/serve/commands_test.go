package serve

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/resources"
)

func TestParseServeCommand(t *testing.T) {
	good := map[string]serveCommand{
		"port 18081":      {Verb: verbPort, Port: 18081},
		"  port   1  ":    {Verb: verbPort, Port: 1},
		"port 65535":      {Verb: verbPort, Port: 65535},
		"PORT 18081\r":    {Verb: verbPort, Port: 18081},
		"invalid":         {Verb: verbInvalid},
		"valid":           {Verb: verbValid},
		"remove":          {Verb: verbRemove},
		"restore":         {Verb: verbRestore},
		"status":          {Verb: verbStatus},
		"status --json":   {Verb: verbStatus, JSON: true},
		"request":         {Verb: verbRequest},
		"help":            {Verb: verbHelp},
		"quit":            {Verb: verbQuit},
		"\tStatus ":       {Verb: verbStatus},
		"":                {},
		"   \t ":          {},
		"\r":              {},
		"port +18081":     {Verb: verbPort, Port: 18081},
		"restore\t\t\t\t": {Verb: verbRestore},
	}
	for line, want := range good {
		got, err := parseServeCommand(line)
		require.NoError(t, err, "line %q", line)
		assert.Equal(t, want, got, "line %q", line)
	}
	bad := map[string]string{
		"frobnicate":                       `unknown command "frobnicate"`,
		"port":                             "port needs the endpoint port",
		"port 0":                           `bad port "0"`,
		"port -1":                          `bad port "-1"`,
		"port 70000":                       `bad port "70000"`,
		"port abc":                         `bad port "abc"`,
		"port 127.0.0.1:9000":              `bad port "127.0.0.1:9000"`,
		"port 18081 18082":                 "port takes one argument, got 2",
		"status now":                       `status takes no arguments but --json (got "now")`,
		"status --json now":                `status takes no arguments but --json (got "--json now")`,
		"request twice":                    `request takes no arguments (got "twice")`,
		"quit please":                      "quit takes no arguments",
		"invalid route":                    "invalid takes no arguments",
		"valid x":                          "valid takes no arguments",
		"remove inventory":                 "remove takes no arguments",
		"restore all":                      "restore takes no arguments",
		"help me":                          "help takes no arguments",
		"port " + strings.Repeat("9", 500): `bad port "99999999999999999999..."`,
	}
	for line, want := range bad {
		got, err := parseServeCommand(line)
		require.Error(t, err, "line %q", line)
		assert.Contains(t, err.Error(), want, "line %q", line)
		assert.NotContains(t, err.Error(), "\n")
		assert.Less(t, len(err.Error()), 200, "error lines stay short")
		assert.Equal(t, serveCommand{}, got, "a parse error yields the no-op command")
	}
}

func TestApplyServeCommand(t *testing.T) {
	base := resources.State{Version: "1", ListenerPort: 19000, InventoryPort: 18080}
	cases := []struct {
		cmd     serveCommand
		from    func(resources.State) resources.State
		want    func(resources.State) resources.State
		publish bool
	}{
		{serveCommand{Verb: verbPort, Port: 18081}, nil, func(s resources.State) resources.State { s.InventoryPort = 18081; return s }, true},
		{serveCommand{Verb: verbInvalid}, nil, func(s resources.State) resources.State { s.InvalidRoute = true; return s }, true},
		{serveCommand{Verb: verbValid}, func(s resources.State) resources.State { s.InvalidRoute = true; return s }, func(s resources.State) resources.State { return s }, true},
		{serveCommand{Verb: verbRemove}, nil, func(s resources.State) resources.State { s.InventoryRemoved = true; return s }, true},
		{serveCommand{Verb: verbRestore}, func(s resources.State) resources.State { s.InventoryRemoved = true; return s }, func(s resources.State) resources.State { return s }, true},
		// Re-publishing identical content is allowed: it is the redundant-push lesson.
		{serveCommand{Verb: verbValid}, nil, func(s resources.State) resources.State { return s }, true},
		{serveCommand{Verb: verbStatus}, nil, func(s resources.State) resources.State { return s }, false},
		{serveCommand{Verb: verbHelp}, nil, func(s resources.State) resources.State { return s }, false},
		{serveCommand{Verb: verbQuit}, nil, func(s resources.State) resources.State { return s }, false},
		{serveCommand{}, nil, func(s resources.State) resources.State { return s }, false},
	}
	for _, tc := range cases {
		from := base
		if tc.from != nil {
			from = tc.from(base)
		}
		got, publish := applyServeCommand(from, tc.cmd)
		assert.Equal(t, tc.publish, publish, "%+v", tc.cmd)
		assert.Equal(t, tc.want(base), got, "%+v", tc.cmd)
	}
}

// FuzzParseServeCommand checks that no input line panics the parser, that a rejected line
// never publishes, and that every accepted line leads to a state resources.Build accepts.
// Seeds live in testdata/fuzz/FuzzParseServeCommand.
func FuzzParseServeCommand(f *testing.F) {
	bases := []resources.State{
		{Version: "1", ListenerPort: 19000, InventoryPort: 18080},
		{Version: "5", ListenerPort: 19000, InventoryPort: 65535, InvalidRoute: true, InventoryRemoved: true},
	}
	f.Fuzz(func(t *testing.T, line string) {
		cmd, err := parseServeCommand(line)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("parse %q: error is not one line: %q", line, err)
			}
			for _, b := range bases {
				if _, publish := applyServeCommand(b, cmd); publish {
					t.Fatalf("parse %q failed (%v) yet the command publishes", line, err)
				}
			}
			return
		}
		if cmd.Verb == verbPort && (cmd.Port < 1 || cmd.Port > 65535) {
			t.Fatalf("parse %q: port %d outside 1-65535", line, cmd.Port)
		}
		if cmd.Verb != verbPort && cmd.Port != 0 {
			t.Fatalf("parse %q: %s carries port %d", line, cmd.Verb, cmd.Port)
		}
		for _, b := range bases {
			next, publish := applyServeCommand(b, cmd)
			if !publish && !reflect.DeepEqual(next, b) {
				t.Fatalf("parse %q: %s changed the state without publishing", line, cmd.Verb)
			}
			next.Version = "99"
			if _, err := resources.Build(next); err != nil {
				t.Fatalf("parse %q: state after %s does not build: %v", line, cmd.Verb, err)
			}
		}
	})
}

// TestServeHelpNamesTheClient: help words request for the client served; lab serve
// Help("") names both (lab serve --help lists it).
func TestServeHelpNamesTheClient(t *testing.T) {
	line := func(help string) string {
		i := strings.Index(help, "  request   ")
		j := strings.Index(help, "  help      ")
		require.True(t, i >= 0 && j > i, help)
		return help[i:j]
	}
	envoy, grpc, both := line(Help(ClientEnvoy)), line(Help(ClientGRPC)), line(Help(""))
	assert.Equal(t, "  request   send GET /quote through Envoy (serve --with-envoy): who answered, status, flags\n", envoy)
	assert.Equal(t, "  request   send GET /quote through the grpc client as one RPC: who answered, status, rpc status\n", grpc)
	assert.NotContains(t, grpc, "Envoy")
	assert.Contains(t, both, "Envoy")
	assert.Contains(t, both, "grpc client")
}
