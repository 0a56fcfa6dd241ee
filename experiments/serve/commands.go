package serve

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
)

// serveVerb is one `lab serve` stdin command.
type serveVerb string

const (
	verbNone    serveVerb = "" // empty line: ignored
	verbPort    serveVerb = "port"
	verbInvalid serveVerb = "invalid"
	verbValid   serveVerb = "valid"
	verbRemove  serveVerb = "remove"
	verbRestore serveVerb = "restore"
	verbStatus  serveVerb = "status"
	verbRequest serveVerb = "request"
	verbHelp    serveVerb = "help"
	verbQuit    serveVerb = "quit"
)

// serveCommand is a parsed stdin line. Port is set only for verbPort, JSON only for
// verbStatus.
type serveCommand struct {
	Verb serveVerb
	Port int
	JSON bool
}

// String is the command as a step name: its verb and argument ("port 18081").
func (c serveCommand) String() string {
	switch {
	case c.Verb == verbPort:
		return fmt.Sprintf("port %d", c.Port)
	case c.JSON:
		return string(c.Verb) + " --json"
	}
	return string(c.Verb)
}

// Help is the command list `help` prints, worded for the client served: envoy,
// grpc, or "" for both (lab serve --help).
func Help(client string) string {
	request := map[string]string{
		ClientEnvoy: "send GET /quote through Envoy (serve --with-envoy): who answered, status, flags",
		ClientGRPC:  "send GET /quote through the grpc client as one RPC: who answered, status, rpc status",
		"": "send GET /quote through Envoy (--with-envoy: status, flags) or the grpc client\n" +
			"            (--client grpc: one RPC, its status): who answered",
	}[client]
	return fmt.Sprintf(serveHelpFormat, request)
}

// serveHelpFormat is the command list; %s is what request does.
const serveHelpFormat = `commands (one per line):
  port N    publish a new state whose inventory endpoint is 127.0.0.1:N (EDS changes)
  invalid   publish a route the client must reject (RDS changes; watch the NACK)
  valid     publish the valid route again (RDS changes)
  remove    publish without the inventory cluster and its endpoints (CDS and EDS change)
  restore   bring the cluster and its endpoints back (CDS and EDS change)
  status    per stream: node, peer, protocol; per type SYNCED, STALE, NACKED or NOT SENT;
            per resource the version the client runs (status --json: the same as JSON)
  request   %s
  help      show this list
  quit      stop the server (end of input does the same)`

// parseServeCommand parses one stdin line. An empty or blank line is verbNone. On error
// the command is the zero value, which applies as a no-op.
func parseServeCommand(line string) (serveCommand, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return serveCommand{}, nil
	}
	verb := serveVerb(strings.ToLower(fields[0]))
	args := fields[1:]
	switch verb {
	case verbPort:
		if len(args) == 0 {
			return serveCommand{}, errors.New("port needs the endpoint port 1-65535, e.g. port 18081")
		}
		if len(args) > 1 {
			return serveCommand{}, fmt.Errorf("port takes one argument, got %d", len(args))
		}
		p, err := loopback.ParsePort(args[0])
		if err != nil {
			return serveCommand{}, fmt.Errorf("bad port %q: want a number 1-65535 (the host is always %s)", serveTruncate(args[0], 20), loopback.Host)
		}
		return serveCommand{Verb: verbPort, Port: p}, nil
	case verbStatus:
		if len(args) == 1 && args[0] == "--json" {
			return serveCommand{Verb: verb, JSON: true}, nil
		}
		if len(args) != 0 {
			return serveCommand{}, fmt.Errorf("status takes no arguments but --json (got %q)", serveTruncate(strings.Join(args, " "), 40))
		}
		return serveCommand{Verb: verb}, nil
	case verbInvalid, verbValid, verbRemove, verbRestore, verbRequest, verbHelp, verbQuit:
		if len(args) != 0 {
			return serveCommand{}, fmt.Errorf("%s takes no arguments (got %q)", verb, serveTruncate(strings.Join(args, " "), 40))
		}
		return serveCommand{Verb: verb}, nil
	}
	return serveCommand{}, fmt.Errorf("unknown command %q (type help for the list)", serveTruncate(fields[0], 40))
}

// serveTruncate keeps error lines short when the input is long.
func serveTruncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}

// applyServeCommand returns the state after cmd and whether it must be published. Only
// state commands publish; they publish even when nothing changes, because a new version
// with identical content is itself a lesson (SotW re-sends, delta does not). The version
// label is left to the caller, which numbers publishes in order.
func applyServeCommand(s resources.State, cmd serveCommand) (resources.State, bool) {
	switch cmd.Verb {
	case verbPort:
		s.InventoryPort = cmd.Port
	case verbInvalid:
		s.InvalidRoute = true
	case verbValid:
		s.InvalidRoute = false
	case verbRemove:
		s.InventoryRemoved = true
	case verbRestore:
		s.InventoryRemoved = false
	default:
		return s, false
	}
	return s, true
}
