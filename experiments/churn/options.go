package churn

import (
	"errors"
	"fmt"
	"time"

	"github.com/xds-workbench/lab/shared/option"
)

// Defaults: the soak the issue asks for (make soak-churn).
const (
	DefaultDuration     = 10 * time.Minute
	DefaultClients      = 1000
	DefaultPublishRate  = 10
	DefaultEnvoys       = 3
	DefaultKillMin      = 20 * time.Second
	DefaultKillMax      = 60 * time.Second
	DefaultNackRate     = 0.02
	DefaultSampleEvery  = 10 * time.Second
	DefaultBaseline     = time.Minute
	DefaultLifetimeMin  = 5 * time.Second
	DefaultLifetimeMax  = 60 * time.Second
	DefaultGrowthLimit  = 0.10
	DefaultLogRateLimit = 0.25
)

// Bounds of the counts, so that a typo cannot start a million goroutines.
const (
	maxClients     = 20000
	maxPublishRate = 1000
	maxEnvoys      = 16
)

// Options configure a soak. Zero fields take the defaults (WithDefaults); Validate
// refuses the rest once, with option errors naming the option in words.
type Options struct {
	// Duration is how long clients churn and the control planes publish.
	Duration time.Duration
	// Clients is how many simulated clients are connected at any time, split evenly
	// between the SotW and the delta control plane.
	Clients int
	// PublishRate is changes per second, published to every node of both planes.
	PublishRate int
	// Envoys is how many real Envoys run (0: none); the first of every two is SotW.
	Envoys int
	// NoEnvoys runs without Envoy even though Envoys is the default (tests, machines
	// without Envoy).
	NoEnvoys bool
	// KillMin and KillMax bound the random wait between an Envoy's (re)start and its
	// SIGKILL.
	KillMin, KillMax time.Duration
	// LifetimeMin and LifetimeMax bound a simulated client's random lifetime.
	LifetimeMin, LifetimeMax time.Duration
	// NackRate is the share of valid responses a simulated client NACKs anyway. Unlike
	// the other fields, 0 is taken as asked (no NACKs), not as the default; the CLI's
	// flag default is DefaultNackRate.
	NackRate float64
	// SampleEvery is the sampling period.
	SampleEvery time.Duration
	// Baseline is when the growth verdicts take their reference sample (after start-up:
	// every client connected, the first publishes done).
	Baseline time.Duration
	// GrowthLimit is how far over its baseline heap, goroutines and fds may end (0.10:
	// 10%); LogRateLimit the same for the log's bytes per publish. 0 takes the default:
	// sampling noise alone would fail a zero limit.
	GrowthLimit, LogRateLimit float64
	// Seed seeds every random choice (0: the start time).
	Seed int64
	// Out is the directory of the run's files (required).
	Out string
	// EnvoyBin overrides where Envoy is found (envoy.Find).
	EnvoyBin string
}

// ErrOrder is the reason of an option whose bounds are the wrong way round or whose
// baseline is not inside the run.
var ErrOrder = errors.New("must be positive and in order")

// WithDefaults fills zero fields.
func (o Options) WithDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Duration, DefaultDuration)
	def(&o.KillMin, DefaultKillMin)
	def(&o.KillMax, DefaultKillMax)
	def(&o.LifetimeMin, DefaultLifetimeMin)
	def(&o.LifetimeMax, DefaultLifetimeMax)
	def(&o.SampleEvery, DefaultSampleEvery)
	def(&o.Baseline, DefaultBaseline)
	if o.Clients == 0 {
		o.Clients = DefaultClients
	}
	if o.PublishRate == 0 {
		o.PublishRate = DefaultPublishRate
	}
	if o.Envoys == 0 && !o.NoEnvoys {
		o.Envoys = DefaultEnvoys
	}
	if o.NoEnvoys {
		o.Envoys = 0
	}
	if o.GrowthLimit == 0 {
		o.GrowthLimit = DefaultGrowthLimit
	}
	if o.LogRateLimit == 0 {
		o.LogRateLimit = DefaultLogRateLimit
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano()
	}
	return o
}

// Validate checks o (after WithDefaults) once: counts in range, durations in order.
func (o Options) Validate() error {
	counts := []struct {
		name     string
		v, lo, h int
	}{
		{"clients", o.Clients, 2, maxClients},
		{"publish rate", o.PublishRate, 1, maxPublishRate},
		{"envoys", o.Envoys, 0, maxEnvoys},
	}
	for _, c := range counts {
		if c.v < c.lo || c.v > c.h {
			return &option.Error{Option: c.name, Value: fmt.Sprint(c.v), Err: &option.RangeError{Min: c.lo, Max: c.h}}
		}
	}
	order := []struct {
		name   string
		lo, hi time.Duration
	}{
		{"kill interval", o.KillMin, o.KillMax},
		{"client lifetime", o.LifetimeMin, o.LifetimeMax},
		{"sample interval", o.SampleEvery, o.Duration},
		{"baseline", o.Baseline, o.Duration},
	}
	for _, d := range order {
		if d.lo <= 0 || d.hi < d.lo {
			return &option.Error{Option: d.name, Value: fmt.Sprintf("%s-%s", d.lo, d.hi), Err: ErrOrder}
		}
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"nack rate", o.NackRate}, {"growth limit", o.GrowthLimit}, {"log rate limit", o.LogRateLimit}} {
		if r.v < 0 || r.v >= 1 {
			return &option.Error{Option: r.name, Value: fmt.Sprint(r.v), Err: ErrShare}
		}
	}
	if o.Out == "" {
		return &option.Error{Option: "output directory", Err: errors.New("required")}
	}
	return nil
}

// ErrShare is the reason of a share outside [0, 1).
var ErrShare = errors.New("must be at least 0 and below 1")
