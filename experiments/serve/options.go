package serve

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/suggest"
	"github.com/xds-workbench/lab/sotw"
)

// Options configures Run.
type Options struct {
	Mode          protocol.Mode
	XDSAddr       string
	NodeID        string
	InventoryPort int
	ListenerPort  int
	LogPath       string
	SotWVersions  string
	NackPolicy    string
	Cache         publish.Cache
	// OnDemand serves the teaching state's route (VHDS, Host "quote") and/or its cluster
	// (on-demand CDS) on demand; delta only.
	OnDemand resources.OnDemand
	Limits   controlplane.Limits
	// MaxLogSize: past it the recorder condenses NACK storms (0: never).
	MaxLogSize int64
	// StormEvery is how often a storm in progress is summarized on the console.
	StormEvery time.Duration
	// Quiet keeps the console to publishes and errors (no per-event lines).
	Quiet bool
	// WithEnvoy and WithInventory start the teaching setup beside the control plane
	// (env.go): Envoy, and backends v1 on InventoryPort and v2 on V2Port.
	WithEnvoy, WithInventory bool
	// V2Port is backend v2's port: InventoryPort+1 when 0 (the port a `port N` moving
	// the traffic to v2 names). Tests set it to a free port.
	V2Port int
	// EnvoyBin is Envoy's binary for WithEnvoy ("": envoy.Find's default order).
	EnvoyBin string
	// Client is the data plane the state is shaped for and ClientGRPC starts: ClientEnvoy
	// (the default), or ClientGRPC, grpc-go's xDS client (env.go), served the proxyless
	// shape (resources.State.Proxyless).
	Client string
	// GRPCCommand runs the grpc client (zero: `lab grpc-client` from this executable).
	GRPCCommand grpcclient.Command
	// MetricsAddr serves Prometheus metrics there ("": off; metrics.go).
	MetricsAddr string
	// FreePorts: every port option not given takes a free loopback port instead of its
	// default (ports.go), so serve runs beside another serve or a make lab.
	FreePorts bool
	// Given reports whether an option (Option*) was set by the user; nil: none.
	Given func(option string) bool
}

// DefaultOptions are serve's defaults; Mode has none.
func DefaultOptions() Options {
	return Options{
		XDSAddr:       controlplane.DefaultAddr,
		NodeID:        resources.NodeID,
		InventoryPort: 18080,
		ListenerPort:  resources.DefaultListener,
		LogPath:       "xds.log",
		Cache:         publish.SnapshotCache,
		Client:        ClientEnvoy,
		Limits:        controlplane.DefaultLimits(),
		MaxLogSize:    DefaultMaxLogSize,
		StormEvery:    5 * time.Second,
	}
}

// DefaultMaxLogSize is serve's default MaxLogSize: a NACK storm writes about 1.6 MB/s, so
// an unattended storm reaches it in under three minutes and then writes one line a second.
const DefaultMaxLogSize = 256 << 20

// Values of Options.Client.
const (
	ClientEnvoy = "envoy"
	ClientGRPC  = "grpc"
)

// The options a refusal names (option.Error.Option); cmd/lab maps them to its flags.
const (
	OptionMode                 = "mode"
	OptionXDSAddr              = "xds addr"
	OptionInventoryPort        = "inventory port"
	OptionListenerPort         = "listener port"
	OptionLog                  = "log"
	OptionSotWVersions         = "sotw versions"
	OptionNackPolicy           = "nack policy"
	OptionCache                = "cache"
	OptionOnDemand             = "on demand"
	OptionMaxRecvMsgBytes      = "max recv msg bytes"
	OptionMaxSendMsgBytes      = "max send msg bytes"
	OptionMaxConcurrentStreams = "max concurrent streams"
	OptionMaxStreams           = "max streams"
	OptionKeepaliveMinTime     = "keepalive min time"
	OptionClient               = "client"
	OptionWithEnvoy            = "with envoy"
	OptionMetricsAddr          = "metrics addr"
)

// Rule errors of a refusal (option.Error.Err), for callers to word in their own terms.
var (
	// ErrNoMode: Mode is empty.
	ErrNoMode = errors.New("not given (want sotw or delta)")
	// ErrNoLog: LogPath is empty.
	ErrNoLog = errors.New("empty (want a file path)")
	// ErrNoRoomForV2: WithInventory serves v2 on InventoryPort+1, past the last port.
	ErrNoRoomForV2 = errors.New("v2 is served on the next port, past the last")
	// ErrSotWOnly: a SotW option given with delta.
	ErrSotWOnly = errors.New("SotW only")
	// ErrGRPCWithEnvoy: ClientGRPC runs grpc-go's client instead of Envoy.
	ErrGRPCWithEnvoy = errors.New("WithEnvoy runs Envoy; the grpc client runs grpc-go's client instead: give one")
	// ErrUnknownCache, ErrUnknownClient, ErrUnknownVersions, ErrUnknownNackPolicy: a
	// value that is none of the known ones.
	ErrUnknownCache      = errors.New("unknown cache (" + publish.CacheWant + ")")
	ErrUnknownClient     = errors.New("unknown client (want envoy or grpc)")
	ErrUnknownVersions   = errors.New("unknown version strategy (want uniform or per-type)")
	ErrUnknownNackPolicy = errors.New("unknown NACK policy")
)

// Bounds of serve's limits: each must be positive (zero would silently mean the
// library's default), and bounded so a typo cannot ask for gigabytes.
var (
	MsgBytesRange  = option.RangeError{Min: 1, Max: 1 << 30}
	StreamsRange   = option.RangeError{Min: 1, Max: 1_000_000}
	PortRange      = option.RangeError{Min: 1, Max: 65535}
	KeepaliveRange = DurationRange{Min: time.Millisecond, Max: time.Hour}
)

// DurationRange is a duration outside its bounds.
type DurationRange struct{ Min, Max time.Duration }

func (r *DurationRange) Error() string {
	return fmt.Sprintf("outside %v-%v", r.Min, r.Max)
}

func refuse(opt, value string, err error) error {
	return &option.Error{Option: opt, Value: value, Err: err}
}

// Validate checks every option before anything starts, and returns an *option.Error
// naming the first one refused. "localhost" in XDSAddr becomes 127.0.0.1; V2Port
// defaults to InventoryPort+1 with WithInventory.
func (o *Options) Validate() error {
	if err := o.checkMode(); err != nil {
		return err
	}
	port, err := loopback.ParseListenAddr(o.XDSAddr)
	if err != nil {
		var ae *loopback.AddrError
		if errors.As(err, &ae) {
			err = errors.New(ae.Problem)
		}
		return refuse(OptionXDSAddr, o.XDSAddr, err)
	}
	o.XDSAddr = loopback.Addr(port)
	if err := o.checkCounts(); err != nil {
		return err
	}
	if d := o.Limits.KeepaliveMinTime; d < KeepaliveRange.Min || d > KeepaliveRange.Max {
		r := KeepaliveRange
		return refuse(OptionKeepaliveMinTime, d.String(), &r)
	}
	if o.LogPath == "" {
		return refuse(OptionLog, "", ErrNoLog)
	}
	if o.V2Port == 0 && o.WithInventory {
		if o.InventoryPort >= PortRange.Max {
			return refuse(OptionInventoryPort, strconv.Itoa(o.InventoryPort), ErrNoRoomForV2)
		}
		o.V2Port = o.InventoryPort + 1
	}
	return o.checkShape()
}

func (o *Options) checkMode() error {
	switch o.Mode {
	case "":
		return refuse(OptionMode, "", ErrNoMode)
	case protocol.SotW, protocol.Delta:
		return nil
	}
	return refuse(OptionMode, o.Mode.String(), errors.New("unknown protocol (want sotw or delta)"))
}

// checkCounts checks the ports and the limits against their bounds.
func (o *Options) checkCounts() error {
	for _, c := range []struct {
		opt string
		n   int
		r   option.RangeError
	}{
		{OptionInventoryPort, o.InventoryPort, PortRange},
		{OptionListenerPort, o.ListenerPort, PortRange},
		{OptionMaxRecvMsgBytes, o.Limits.MaxRecvMsgSize, MsgBytesRange},
		{OptionMaxSendMsgBytes, o.Limits.MaxSendMsgSize, MsgBytesRange},
		{OptionMaxConcurrentStreams, int(o.Limits.MaxConcurrentStreams), StreamsRange},
		{OptionMaxStreams, o.Limits.MaxStreams, StreamsRange},
	} {
		if c.n < c.r.Min || c.n > c.r.Max {
			r := c.r
			return refuse(c.opt, strconv.Itoa(c.n), &r)
		}
	}
	return nil
}

// checkShape checks the cache, on demand, the client and the SotW options against the
// mode and each other.
func (o *Options) checkShape() error {
	if o.Cache == "" {
		o.Cache = publish.SnapshotCache
	}
	if _, err := publish.ParseCache(string(o.Cache)); err != nil {
		return refuse(OptionCache, string(o.Cache), ErrUnknownCache)
	}
	err := controlplane.CheckCacheOptions(o.Cache, o.Mode, publish.VersionStrategy(o.SotWVersions), sotw.NackPolicy(o.NackPolicy))
	switch {
	case errors.Is(err, controlplane.ErrUniformNeedsSnapshot):
		return refuse(OptionSotWVersions, o.SotWVersions, err)
	case err != nil:
		return refuse(OptionNackPolicy, o.NackPolicy, err)
	}
	if err := o.OnDemand.CheckMode(o.Mode == protocol.SotW); err != nil {
		return refuse(OptionOnDemand, o.OnDemand.String(), err)
	}
	if err := o.checkClient(); err != nil {
		return err
	}
	if o.Mode == protocol.Delta {
		if o.SotWVersions != "" {
			return refuse(OptionSotWVersions, o.SotWVersions, ErrSotWOnly)
		}
		if o.NackPolicy != "" {
			return refuse(OptionNackPolicy, o.NackPolicy, ErrSotWOnly)
		}
		return nil
	}
	if _, err := publish.ParseVersionStrategy(o.SotWVersions); err != nil {
		return refuse(OptionSotWVersions, o.SotWVersions, ErrUnknownVersions)
	}
	if _, err := sotw.ParseNackPolicy(o.NackPolicy); err != nil {
		return refuse(OptionNackPolicy, o.NackPolicy, fmt.Errorf("%w (want %s)", ErrUnknownNackPolicy, suggest.OrList(sotw.PolicyNames())))
	}
	return nil
}

// checkClient refuses what the grpc client cannot be served, before anything starts.
func (o *Options) checkClient() error {
	switch o.Client {
	case "", ClientEnvoy:
		o.Client = ClientEnvoy
		return nil
	case ClientGRPC:
	default:
		return refuse(OptionClient, o.Client, ErrUnknownClient)
	}
	switch {
	case o.Mode != protocol.SotW:
		return refuse(OptionClient, o.Client, grpcclient.ErrNoDelta)
	case o.WithEnvoy:
		return refuse(OptionClient, o.Client, ErrGRPCWithEnvoy)
	}
	// On demand needs delta (checked above), which grpc-go has not: refused above.
	return nil
}
