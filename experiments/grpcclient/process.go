package grpcclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/experiments/childproc"
	"github.com/xds-workbench/lab/shared/loopback"
)

// Time limits of the parent side.
const (
	DefaultStartTimeout = 30 * time.Second
	stopGrace           = 5 * time.Second
	pollInterval        = 25 * time.Millisecond
)

// Command is how to run the child: `lab grpc-client` (LabCommand), or a test binary that
// runs the child's code when its environment says so (ChildMain).
type Command struct {
	Path string
	Args []string // after Path, before the child's own flags
	Env  []string // added to the inherited environment
}

// LabCommand runs `lab grpc-client` from this very executable.
func LabCommand() (Command, error) {
	exe, err := os.Executable()
	if err != nil {
		return Command{}, fmt.Errorf("grpc client: find the lab executable: %w", err)
	}
	return Command{Path: exe, Args: []string{"grpc-client"}}, nil
}

// StartOptions say how to start one client.
type StartOptions struct {
	Command Command
	// XDSAddr is the control plane (127.0.0.1:PORT); NodeID the node the client is.
	XDSAddr string
	NodeID  string
	// Target is what it dials (resources.ProxylessTarget when empty).
	Target string
	// LogPath receives the child's output (grpc-go's own log) ("": kept in memory only).
	LogPath string
	// FrontDoorPort is the front door's port (0: a free one).
	FrontDoorPort int
}

// Client is a running grpc-go client process.
type Client struct {
	proc      *childproc.Process
	tmpDir    string
	output    *childproc.Tail
	logFile   *os.File
	ports     Ports
	nodeID    string
	stopOnce  sync.Once
	stopErr   error
	csdsMu    sync.Mutex
	csdsConn  *grpc.ClientConn
	csdsStubs statuspb.ClientStatusDiscoveryServiceClient
	// closed: Stop ran; no new CSDS connection is made.
	closed bool
}

// Start runs the child with its bootstrap in its environment and returns once it has
// written its ports (its front door and CSDS listen). ctx bounds only that wait
// (DefaultStartTimeout when it has no deadline).
func Start(ctx context.Context, o StartOptions) (*Client, error) {
	if o.Command.Path == "" {
		return nil, errors.New("start grpc client: no command")
	}
	boot, err := Bootstrap(o.XDSAddr, o.NodeID)
	if err != nil {
		return nil, fmt.Errorf("start grpc client: %w", err)
	}
	tmp, err := os.MkdirTemp("", "lab-grpc-client-")
	if err != nil {
		return nil, fmt.Errorf("start grpc client: temp dir: %w", err)
	}
	c := &Client{tmpDir: tmp, output: &childproc.Tail{Max: 16 << 10}, nodeID: o.NodeID}
	var out io.Writer = c.output
	if o.LogPath != "" {
		if c.logFile, err = os.OpenFile(o.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("start grpc client: log: %w", err)
		}
		out = io.MultiWriter(c.logFile, c.output)
	}
	portsFile := filepath.Join(tmp, "ports.json")
	args := append(append([]string{}, o.Command.Args...), "--ports-file", portsFile, "--front-door-port", fmt.Sprint(o.FrontDoorPort))
	if o.Target != "" {
		args = append(args, "--target", o.Target)
	}
	cmd := childproc.Command(o.Command.Path, args...)
	cmd.Env = append(append(os.Environ(), o.Command.Env...), BootstrapEnv+"="+string(boot))
	cmd.Stdout, cmd.Stderr = out, out
	if c.proc, err = childproc.Start(cmd); err != nil {
		c.cleanup()
		return nil, fmt.Errorf("start grpc client %s: %w", o.Command.Path, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	if err := c.waitPorts(ctx, portsFile); err != nil {
		_, _ = c.proc.Stop(context.Background(), 0)
		err = fmt.Errorf("start grpc client: %w%s", err, c.diagnostics())
		c.cleanup()
		return nil, err
	}
	return c, nil
}

// waitPorts polls until the child has written its ports file.
func (c *Client) waitPorts(ctx context.Context, path string) error {
	var last error
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			if err = json.Unmarshal(b, &c.ports); err == nil {
				if _, _, err = loopback.ParseAddr(c.ports.FrontDoor); err == nil {
					_, _, err = loopback.ParseAddr(c.ports.CSDS)
				}
			}
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("no ports file: %w (last: %v)", ctx.Err(), last)
		case <-c.proc.Exited():
			return fmt.Errorf("the client exited during startup: %v", c.proc.ExitErr())
		case <-time.After(pollInterval):
		}
	}
}

// FrontDoor is the HTTP front door, 127.0.0.1:PORT.
func (c *Client) FrontDoor() string { return c.ports.FrontDoor }

// CSDSAddr is grpc-go's CSDS server, 127.0.0.1:PORT.
func (c *Client) CSDSAddr() string { return c.ports.CSDS }

// NodeID is the node the client is.
func (c *Client) NodeID() string { return c.nodeID }

// Pid is the client's process id.
func (c *Client) Pid() int { return c.proc.Pid() }

// Exited is closed once the client has exited; ExitErr then says how.
func (c *Client) Exited() <-chan struct{} { return c.proc.Exited() }

// ExitErr is the client's exit status (nil for exit 0 and while it runs).
func (c *Client) ExitErr() error { return c.proc.ExitErr() }

// Kill sends SIGKILL without waiting (fault injection); watch Exited.
func (c *Client) Kill() error { return c.proc.Kill() }

// Stop ends the client (SIGTERM, then SIGKILL after a grace) and returns once it is gone.
// It is idempotent and safe after Kill; the error says when it had to be killed.
func (c *Client) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		defer c.cleanup()
		killed, err := c.proc.Stop(ctx, stopGrace)
		switch {
		case err != nil:
			c.stopErr = fmt.Errorf("stop grpc client: %w", err)
		case killed:
			c.stopErr = fmt.Errorf("stop grpc client pid %d: ignored SIGTERM, killed", c.Pid())
		}
	})
	return c.stopErr
}

// ClientStatus asks the client's CSDS for everything its xDS client holds.
func (c *Client) ClientStatus(ctx context.Context) (*statuspb.ClientStatusResponse, error) {
	stub, err := c.csdsClient()
	if err != nil {
		return nil, err
	}
	resp, err := stub.FetchClientStatus(ctx, &statuspb.ClientStatusRequest{})
	if err != nil {
		return nil, fmt.Errorf("grpc client csds %s: %w", c.ports.CSDS, err)
	}
	return resp, nil
}

func (c *Client) csdsClient() (statuspb.ClientStatusDiscoveryServiceClient, error) {
	c.csdsMu.Lock()
	defer c.csdsMu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("grpc client csds %s: the client was stopped", c.ports.CSDS)
	}
	if c.csdsStubs != nil {
		return c.csdsStubs, nil
	}
	conn, err := grpc.NewClient("passthrough:///"+c.ports.CSDS, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("grpc client csds %s: %w", c.ports.CSDS, err)
	}
	c.csdsConn, c.csdsStubs = conn, statuspb.NewClientStatusDiscoveryServiceClient(conn)
	return c.csdsStubs, nil
}

// cleanup closes what the parent holds for the child: the CSDS connection, the log, the
// temporary directory.
func (c *Client) cleanup() {
	c.csdsMu.Lock()
	if c.csdsConn != nil {
		_ = c.csdsConn.Close()
		c.csdsConn, c.csdsStubs = nil, nil
	}
	c.closed = true
	c.csdsMu.Unlock()
	if c.logFile != nil {
		_ = c.logFile.Close()
	}
	_ = os.RemoveAll(c.tmpDir)
}

// diagnostics is the tail of the child's output, for startup errors.
func (c *Client) diagnostics() string {
	s := strings.TrimSpace(c.output.String())
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return "\noutput: " + strings.Join(lines, "\n")
}
