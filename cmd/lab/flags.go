package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

// Every refused flag reads "--flag VALUE: what is wrong (want ...)"; main puts the
// command ("lab run: ") in front. The typed flag values below check their value when it
// is parsed, so a bad flag stops the command before anything starts, and say what is
// wrong without repeating the flag or the value.

// flagError is one refused flag value.
type flagError struct {
	flag, value string
	err         error // what is wrong
}

func (e *flagError) Error() string {
	return fmt.Sprintf("--%s %s: %v", e.flag, showValue(e.value), e.err)
}

func (e *flagError) Unwrap() error { return e.err }

// optionRefusal words a library's *option.Error as a refusal of the flag flagOf names
// for its option: "--flag VALUE: what is wrong", or "--flag: what is wrong" when the
// library gives no value (`--flag "": ...` for the options in showEmpty, whose empty
// value is itself what is wrong). Other errors, and options with no flag, pass unchanged.
func optionRefusal(err error, flagOf map[string]string, showEmpty ...string) error {
	var oe *option.Error
	if !errors.As(err, &oe) {
		return err
	}
	flag, ok := flagOf[oe.Option]
	if !ok {
		return err
	}
	if oe.Value == "" && !slices.Contains(showEmpty, oe.Option) {
		return fmt.Errorf("--%s: %w", flag, oe.Err)
	}
	return &flagError{flag: flag, value: oe.Value, err: oe.Err}
}

// errGRPCDelta refuses --client grpc with --mode delta (grpcclient.ErrNoDelta).
var errGRPCDelta = fmt.Errorf("--client grpc: %w; use --mode sotw", grpcclient.ErrNoDelta)

// badFlag builds a flagError from a description of what is wrong.
func badFlag(flag, value, format string, args ...any) error {
	return &flagError{flag: flag, value: value, err: fmt.Errorf(format, args...)}
}

// missingFlag is a required flag that was not given.
func missingFlag(flag, want string) error {
	return fmt.Errorf("--%s: not given (want %s)", flag, want)
}

// showValue quotes a value only when bare it would be unreadable or not one line.
func showValue(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == '"' || r == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}

// rewordFlagError is the root's flag error function: pflag's parse errors in the same
// style as every other error.
func rewordFlagError(cmd *cobra.Command, err error) error {
	var (
		invalid  *pflag.InvalidValueError
		required *pflag.ValueRequiredError
		unknown  *pflag.NotExistError
		syntax   *pflag.InvalidSyntaxError
	)
	switch {
	case errors.As(err, &invalid):
		cause := invalid.Unwrap()
		var num *strconv.NumError
		if errors.As(cause, &num) { // a built-in pflag type: strconv's text names neither
			cause = builtinProblem(invalid.GetFlag().Value.Type())
		}
		return &flagError{flag: invalid.GetFlag().Name, value: invalid.GetValue(), err: cause}
	case errors.As(err, &required):
		return fmt.Errorf("%s: needs a value (see %s --help)", dashed(required.GetSpecifiedName(), required.GetSpecifiedShortnames()), cmd.CommandPath())
	case errors.As(err, &unknown):
		typed := dashed(unknown.GetSpecifiedName(), unknown.GetSpecifiedShortnames())
		return fmt.Errorf("%s: unknown flag%s (see %s --help)", typed, flagSuggestion(cmd, unknown.GetSpecifiedName(), unknown.GetSpecifiedShortnames()), cmd.CommandPath())
	case errors.As(err, &syntax):
		return fmt.Errorf("%s: bad flag syntax (want --flag or --flag=VALUE)", syntax.GetSpecifiedFlag())
	}
	return err
}

// flagSuggestion is "; did you mean --NAME?" for the command's flag nearest to a
// mistyped long one (suggest.Closest), or "".
func flagSuggestion(cmd *cobra.Command, name, shorthands string) string {
	if shorthands != "" {
		return "" // a letter in a shorthand group: every other letter is as near
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	return suggest.Hint(name, names, "--")
}

// dashed is a flag as it was typed: --name, or -n when it came in a shorthand group.
func dashed(name, shorthands string) string {
	if shorthands != "" {
		return "-" + name
	}
	return "--" + name
}

// builtinProblem says what is wrong with a value a built-in pflag type refused.
func builtinProblem(typ string) error {
	switch {
	case typ == "bool":
		return errors.New("not true or false")
	case strings.HasPrefix(typ, "int") || strings.HasPrefix(typ, "uint"):
		return errors.New("not a whole number")
	}
	return fmt.Errorf("not a valid %s", typ)
}

// noArgs refuses positional arguments, naming the usage.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s: unexpected argument (usage: %s)", showValue(args[0]), cmd.UseLine())
	}
	return nil
}

// parseMode is the one reading of a protocol name, shared by run, serve, bootstrap and
// bench: protocol.ParseMode worded for a flag. Its error is the problem alone; callers
// add the flag.
func parseMode(s string) (protocol.Mode, error) {
	m, err := protocol.ParseMode(s)
	if err != nil {
		return "", errors.New("unknown protocol (want sotw or delta)")
	}
	return m, nil
}

// modeNames are modes as the strings a comma-list flag holds and completes.
func modeNames(modes []protocol.Mode) []string {
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = m.String()
	}
	return out
}

// modeValue is --mode.
type modeValue struct{ p *protocol.Mode }

func (v modeValue) String() string { return v.p.String() }
func (modeValue) Type() string     { return "sotw|delta" }
func (v modeValue) Set(s string) error {
	m, err := parseMode(s)
	if err != nil {
		return err
	}
	*v.p = m
	return nil
}

// parseCache is the one reading of a --cache value (publish.ParseCache), shared by run
// and serve. Its error is the problem alone; callers add the flag.
func parseCache(s string) (publish.Cache, error) {
	if s == "" {
		return "", errors.New("empty (" + publish.CacheWant + ")")
	}
	c, err := publish.ParseCache(s)
	if err != nil {
		return "", errors.New("unknown cache (" + publish.CacheWant + ")")
	}
	return c, nil
}

// cacheValue is --cache.
type cacheValue struct{ p *publish.Cache }

func (v cacheValue) String() string { return string(*v.p) }
func (cacheValue) Type() string     { return "snapshot|snapshot-noads|linear|indexed" }
func (v cacheValue) Set(s string) error {
	c, err := parseCache(s)
	if err != nil {
		return err
	}
	*v.p = c
	return nil
}

// metricsAddrHelp is --metrics-addr's usage line (lab serve, lab run).
const metricsAddrHelp = "serve Prometheus metrics of the xDS exchange at http://ADDR/metrics, 127.0.0.1:PORT (port 0 picks a free one; default off; docs/metrics.md)"

// cacheHelp is --cache's usage line.
const cacheHelp = "library cache: snapshot (one SnapshotCache, ads=true: a SotW request naming a subset of a type is never answered), snapshot-noads (the same without that ADS rule: a subset is answered, responses no longer ordered by type; the same SotW options), linear (a LinearCache per type behind a MuxCache; SotW versions per type, NACK holds) or indexed (the workbench's O(change) cache with the LinearCache's semantics, shared/indexcache; the same SotW options)"

// checkCache words as flags, in one line, the refusal of the SotW options the cache
// cannot honour (flag values as given; "" is the default). The rule is
// controlplane.CheckCacheOptions'; only the wording is here.
func checkCache(cache publish.Cache, mode protocol.Mode, versions, nackPolicy string) error {
	if _, err := publish.ParseCache(string(cache)); err != nil {
		return badFlag("cache", string(cache), "unknown cache ("+publish.CacheWant+")")
	}
	// The flags accept only known names; "" (unset) is the cache's default and passes.
	err := controlplane.CheckCacheOptions(cache, mode, publish.VersionStrategy(versions), sotw.NackPolicy(nackPolicy))
	if err == nil {
		return nil
	}
	each, a := "each LinearCache versions its own type", "a LinearCache"
	if cache == publish.IndexedCache {
		each, a = "the indexed cache versions each type itself", "the indexed cache, like a LinearCache,"
	}
	switch {
	case errors.Is(err, controlplane.ErrUniformNeedsSnapshot):
		return badFlag("sotw-versions", versions, "needs --cache snapshot: %s (want per-type, or no --sotw-versions, with --cache %s)", each, cache)
	case errors.Is(err, controlplane.ErrResendNeedsSnapshot):
		return badFlag("nack-policy", nackPolicy, "needs --cache snapshot: %s tracks what it sent, not what was ACKed, so it never re-sends a rejected response (want hold or revert, or no --nack-policy, with --cache %s)", a, cache)
	case errors.Is(err, controlplane.ErrBackoffNeedsSnapshot):
		return badFlag("nack-policy", nackPolicy, "needs --cache snapshot: %s never re-sends a rejected response, so there is no re-send to delay (want hold or revert, or no --nack-policy, with --cache %s)", a, cache)
	}
	return err
}

// nackPolicyHelp is --nack-policy's usage line.
const nackPolicyHelp = "SotW behaviour after a NACK: resend (the library's loop: the rejected response again at once), hold (nothing until the next publish), " +
	"backoff (resend after 100ms, doubling per NACK up to 5s; snapshot cache only) or revert (republish what the client last accepted) " +
	"(default resend, hold with --cache linear; sotw only)"

// sotwOnly refuses a SotW option given a value with another protocol.
func sotwOnly(flag, value string) error {
	if value == "" {
		return nil
	}
	return badFlag(flag, value, "SotW only (want --mode sotw, or no --%s)", flag)
}

// onDemandValue is --on-demand: what Envoy fetches only when traffic needs it
// (resources.ParseOnDemand reads it; resources.OnDemand.CheckMode refuses it for SotW).
type onDemandValue struct{ p *resources.OnDemand }

func (v onDemandValue) String() string { return v.p.String() }
func (onDemandValue) Type() string     { return "vhds,cds" }
func (v onDemandValue) Set(s string) error {
	o, err := resources.ParseOnDemand(s)
	if err != nil {
		return err
	}
	*v.p = o
	return nil
}

// checkOnDemand refuses an on-demand shape with --mode sotw, naming the flag.
func checkOnDemand(o resources.OnDemand, mode protocol.Mode) error {
	if err := o.CheckMode(mode == protocol.SotW); err != nil {
		return &flagError{flag: "on-demand", value: o.String(), err: err}
	}
	return nil
}

// checkMode is --mode for callers that bypass the flag (tests of a run function).
func checkMode(mode protocol.Mode) error {
	if mode == "" {
		return missingFlag("mode", "sotw or delta")
	}
	if _, err := parseMode(mode.String()); err != nil {
		return &flagError{flag: "mode", value: mode.String(), err: err}
	}
	return nil
}

// choiceValue is a string flag with a fixed set of values; what names them in errors.
type choiceValue struct {
	p      *string
	what   string
	values []string
}

func (v choiceValue) String() string { return *v.p }
func (choiceValue) Type() string     { return "string" }
func (v choiceValue) Set(s string) error {
	if !slices.Contains(v.values, s) {
		return fmt.Errorf("unknown %s (want %s)", v.what, suggest.OrList(v.values))
	}
	*v.p = s
	return nil
}

// intRange is an inclusive range of whole numbers.
type intRange struct{ min, max int }

func (r intRange) String() string { return fmt.Sprintf("%d-%d", r.min, r.max) }

func (r intRange) check(n int) error {
	if n < r.min || n > r.max {
		return fmt.Errorf("outside %s", r)
	}
	return nil
}

// intValue is a whole-number flag within a range.
type intValue struct {
	p *int
	r intRange
}

func (v intValue) String() string { return strconv.Itoa(*v.p) }
func (intValue) Type() string     { return "int" }
func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("not a whole number (want %s)", v.r)
	}
	if err := v.r.check(n); err != nil {
		return err
	}
	*v.p = n
	return nil
}

// uint32Value is intValue for a uint32 option (gRPC's stream limit).
type uint32Value struct {
	p *uint32
	r intRange
}

func (v uint32Value) String() string { return strconv.FormatUint(uint64(*v.p), 10) }
func (uint32Value) Type() string     { return "uint32" }
func (v uint32Value) Set(s string) error {
	var n int
	if err := (intValue{p: &n, r: v.r}).Set(s); err != nil {
		return err
	}
	*v.p = uint32(n)
	return nil
}

// intListValue is a comma list of distinct whole numbers, each within a range; want
// describes the list in errors.
type intListValue struct {
	p    *[]int
	r    intRange
	want string
}

func (v intListValue) String() string {
	s := make([]string, len(*v.p))
	for i, n := range *v.p {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (intListValue) Type() string { return "ints" }

func (v intListValue) Set(s string) error {
	parts := strings.Split(s, ",")
	// A list of one says what is wrong with the value; a longer one names the item.
	item := func(p string) string {
		if len(parts) == 1 {
			return ""
		}
		return showValue(p) + " is "
	}
	var out []int
	for _, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("%snot a whole number (want %s)", item(p), v.want)
		}
		if err := v.r.check(n); err != nil {
			return fmt.Errorf("%s%v (want %s)", item(p), err, v.want)
		}
		if slices.Contains(out, n) {
			return fmt.Errorf("%d is listed twice (want %s)", n, v.want)
		}
		out = append(out, n)
	}
	*v.p = out
	return nil
}

// choiceListValue is a comma list of distinct values, each read by parse (whose error is
// the problem alone).
type choiceListValue struct {
	p     *[]string
	parse func(string) error
}

func (v choiceListValue) String() string { return strings.Join(*v.p, ",") }
func (choiceListValue) Type() string     { return "strings" }
func (v choiceListValue) Set(s string) error {
	parts := strings.Split(s, ",")
	var out []string
	for _, p := range parts {
		if err := v.parse(p); err != nil {
			if len(parts) == 1 {
				return err
			}
			return fmt.Errorf("%s: %w", showValue(p), err)
		}
		if slices.Contains(out, p) {
			return fmt.Errorf("%s is listed twice", p)
		}
		out = append(out, p)
	}
	*v.p = out
	return nil
}

// durationRange is an inclusive range of durations (option.DurationRange: "1s-24h").
type durationRange = option.DurationRange

// durationValue is a duration flag within a range.
type durationValue struct {
	p *time.Duration
	r durationRange
}

func (v durationValue) String() string { return option.ShortDuration(*v.p) }
func (durationValue) Type() string     { return "duration" }
func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration (want %s, e.g. 45s or 2m)", v.r)
	}
	if err := v.r.Check(d); err != nil {
		return err
	}
	*v.p = d
	return nil
}

// Port ranges: a port to use, or one where 0 asks for a free one.
var (
	portRange     = intRange{1, 65535}
	portZeroRange = intRange{0, 65535}
)

// portValue is a port on 127.0.0.1. An address is refused with a message that says the
// host is fixed, rather than a number-parsing error.
type portValue struct {
	p *int
	r intRange
}

func (v portValue) String() string { return strconv.Itoa(*v.p) }
func (portValue) Type() string     { return "port" }
func (v portValue) Set(s string) error {
	p, err := parsePortIn(s, v.r)
	if err != nil {
		return err
	}
	*v.p = p
	return nil
}

func parsePortIn(s string, r intRange) (int, error) {
	if strings.Contains(s, ":") {
		return 0, fmt.Errorf("an address, not a port (want only the port: the host is always %s)", loopback.Host)
	}
	p, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not a number (want a port, %s)", r)
	}
	return p, r.check(p)
}

// portPairValue is --inventory-ports: the two backends' ports, "V1,V2".
type portPairValue struct{ p *[2]int }

func (v portPairValue) String() string { return fmt.Sprintf("%d,%d", v.p[0], v.p[1]) }
func (portPairValue) Type() string     { return "v1,v2" }
func (v portPairValue) Set(s string) error {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return fmt.Errorf("not two ports (want V1,V2, each %s)", portRange)
	}
	var out [2]int
	for i, name := range []string{"v1", "v2"} {
		p, err := parsePortIn(strings.TrimSpace(parts[i]), portRange)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out[i] = p
	}
	*v.p = out
	return nil
}

// addrValue is an address on loopback, stored as 127.0.0.1:PORT ("localhost" is taken to
// mean 127.0.0.1, never resolved). allowZero accepts port 0 (bind a free one).
type addrValue struct {
	p         *string
	allowZero bool
}

func (v addrValue) String() string { return *v.p }
func (addrValue) Type() string     { return "127.0.0.1:port" }
func (v addrValue) Set(s string) error {
	a, err := loopback.Normalize(s, v.allowZero)
	if err != nil {
		return err
	}
	*v.p = a
	return nil
}

// outRefusal words an output directory's refusal (option.CheckOut) as one of --out.
func outRefusal(err error) error {
	return optionRefusal(err, map[string]string{option.OptionOut: "out"})
}

// byteSize is a size flag: a whole number of bytes with an optional unit (KiB, MiB, GiB,
// or KB, MB, GB), e.g. 256MiB.
type byteSize struct{ n *int64 }

var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}

func (b byteSize) String() string {
	if b.n == nil {
		return "0"
	}
	for _, u := range sizeUnits[:3] {
		if *b.n >= u.mult && *b.n%u.mult == 0 && *b.n/u.mult < 1<<10 {
			return fmt.Sprintf("%d%s", *b.n/u.mult, u.suffix)
		}
	}
	return strconv.FormatInt(*b.n, 10)
}

func (b byteSize) Set(s string) error {
	num, mult := s, int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || v < 0 || v > (1<<50)/mult {
		return fmt.Errorf("not a size (want bytes, or a number with KiB, MiB or GiB, e.g. 256MiB)")
	}
	*b.n = v * mult
	return nil
}

func (byteSize) Type() string { return "size" }
