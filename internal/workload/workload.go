// Package workload declares what a workload is: its parameters (with
// defaults and validation) and either an in-guest body that the agent runs
// inside an instance, or a host-driven body that manages instances itself
// (startup, network placements with a host end, footprint).
package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/suggest"
	"github.com/isobench/isobench/internal/window"
)

// Kind of a parameter, deciding how its value is validated.
type Kind int

const (
	Int Kind = iota
	Float
	Size
	Duration
	Bool
	Enum
	String
	// ListenIP is the address a server listens on: an IP literal
	// (net.ParseIP: no names, spaces, quotes or separators) other than
	// the unspecified address (0.0.0.0, ::), so nothing listens on every
	// interface of the machine it runs on.
	ListenIP
)

// Param declares one parameter.
type Param struct {
	Name    string
	Kind    Kind
	Default string
	Help    string
	Enum    []string // allowed values for Enum
	Min     float64  // inclusive lower bound for Int, Float, Size, Duration (seconds)
	Max     float64  // inclusive upper bound; 0 means none
	// Secret marks a credential (a password, a private key): the agent
	// takes it on its standard input, never in its arguments (see
	// FromArgs, agenthost.Options.Secrets), errors never quote it and
	// Params.String leaves it out.
	Secret bool
	// Computed, for a parameter whose Default is empty because the
	// workload's Derive fills it in from other parameters, says what it is
	// computed to (e.g. "1g in stream mode, 128m in ionugget mode"), for
	// 'isobench workloads'. An empty Default without it means "none".
	Computed string
}

// Describe is a parameter as 'isobench workloads' shows it: its default
// ("computed" for one Derive fills in, "none" for none) and its help with
// what the validator allows (an Enum's values) and what a computed default
// is computed to.
func (p Param) Describe() (def, help string) {
	def, help = p.Default, p.Help
	switch {
	case p.Kind == Enum && len(p.Enum) == 1:
		help += " (only " + p.Enum[0] + ")"
	case p.Kind == Enum:
		help += " (one of " + strings.Join(p.Enum, "|") + ")"
	}
	if def == "" {
		def = "none"
		if p.Computed != "" {
			def = "computed"
			help += "; default computed: " + p.Computed
		}
	}
	return def, help
}

// KindsNote says once how durations and sizes are written, as Resolve
// reads them (spec.ParseDuration, spec.ParseSize).
const KindsNote = "Durations are written 10s, 500ms or 2m; a bare number is seconds. Sizes are written 4k, 1m or 1g (powers of 1024); a bare number is bytes."

// Barrier is called by an in-guest workload once its untimed setup is done;
// it returns when every concurrent instance is ready and the host says go.
type Barrier func() error

// AgentFunc is the body of an in-guest workload.
type AgentFunc func(ctx context.Context, p Params, ready Barrier) ([]sample.Metric, error)

// HostEnv is what a host-driven workload gets: the platform, the spec every
// instance it creates must start from, and how many instances this cell runs.
type HostEnv struct {
	Platform  platform.Platform
	Base      platform.Spec
	Instances int
	// NewName returns a unique instance name for this run.
	NewName func() string
	// Window, when set, takes the common measurement window over which a
	// host-driven workload read its instances' tracked rates
	// (agenthost.Group.ApplyWindow), for the runner to record beside
	// them as it does an in-guest workload's.
	Window func(window.Result)
}

// InstanceResult is what one instance of a host-driven workload measured.
type InstanceResult struct {
	Instance int
	Metrics  []sample.Metric
	Tags     map[string]string
}

// HostFunc is the body of a host-driven workload. It must close every
// instance it creates, also when ctx is cancelled.
type HostFunc func(ctx context.Context, p Params, env HostEnv) ([]InstanceResult, error)

// Def is one workload.
type Def struct {
	Name   string
	Help   string
	Params []Param
	// Derive, when set, gives values for parameters left empty whose
	// defaults depend on other parameters (e.g. a personality's file count),
	// so stored samples carry the values that really ran.
	Derive func(Params) map[string]string
	// Check validates combinations of parameters beyond each one's own rule.
	Check func(Params) error
	// Exactly one of Agent and Host is set.
	Agent AgentFunc
	Host  HostFunc
	// Timeout for one repetition given its parameters; zero means a default.
	Timeout func(Params) time.Duration
	// Estimate, when set, is how long one repetition takes at one
	// instance, for plans (within a factor of two or so: durations as
	// given, fixed work from rates measured on a 2-core VM); without it a
	// plan counts DefaultEstimate.
	Estimate func(Params) time.Duration
	// FixedWork says the repetition does a fixed amount of work rather than
	// run for a duration: more instances than cores then take longer.
	FixedWork func(Params) bool
	// Irrelevant, when set, names the parameters that play no part given
	// the others (cpu's duration when events > 0): the labels shown to
	// users (Registry.Label) leave them out. The stored parameters keep
	// them.
	Irrelevant func(Params) []string
	// Needs is what the workload needs of its instances, checked before
	// anything starts (the plan's pre-flight).
	Needs Needs
	// Internal marks a hidden half that host-driven workloads start in
	// their instances (_service, _transfer, ...): its name starts with
	// '_', and no user input reaches it (Registry.Lookup does not know
	// it; only the agent's Registry.LookupAgent does).
	Internal bool
}

// Needs is what a workload needs of the instances it runs in.
type Needs struct {
	// Network: its ends (a server, clients) talk over the network, so an
	// instance without one (network=none) cannot run it, unless both ends
	// are on the host (server=host and client=host). Its ends run at once
	// and compete for the CPU, so the runner creates a host-driven
	// workload's instances with platform.Spec.CPUGroup.
	Network bool
	// Servers: it runs servers (nginx, Apache, Redis, MariaDB, sshd,
	// vsftpd, Samba, Postfix) that only the debian image profile (or the
	// host itself, for native) has.
	Servers bool
	// HostTools, when set, lists what the workload with params p needs on
	// the host that runs isobench: the load generators and clients that
	// run there, and, when native (the host is the instance), the servers
	// and tools that otherwise run in an instance. A dry run checks them
	// and warns of those missing. Every workload that needs Servers or
	// runs an external tool declares it.
	HostTools func(p Params, native bool) []Tool
	// Image is the image profile the workload runs its instances from,
	// whatever the run's --image (spark's: a JVM and Spark); "" for the
	// run's own. A platform that cannot boot that image (a system
	// container needs an init system) refuses the workload's cells.
	Image string
}

// Tool is something a workload needs on the host (Needs.HostTools): an
// executable, or any one of a group of them (Alt), and how to install it.
type Tool struct {
	// Bin is the executable, looked up on PATH.
	Bin string
	// Module: a python3 module named Bin (python3 -c 'import Bin') does
	// as well as the executable.
	Module bool
	// Pkg is the Debian package that has Bin (apt-get install Pkg).
	Pkg string
	// Install, when set, is how to get Bin when no Debian package has it
	// ("pip install pyspark"); it is said instead of Pkg's apt-get.
	Install string
	// Alt are other tools any one of which does instead of this one
	// (spark: spark-submit or python3's pyspark); the group is said with
	// this one's Pkg or Install.
	Alt []Tool
}

// Need is a Tool from Bin and its Debian package Pkg.
func Need(bin, pkg string) Tool { return Tool{Bin: bin, Pkg: pkg} }

// HowToGet is how to install t: its Install, else apt-get install Pkg.
func (t Tool) HowToGet() string {
	if t.Install != "" {
		return t.Install
	}
	return "apt-get install " + t.Pkg
}

// Params is a validated parameter set with defaults filled in.
type Params struct {
	vals   map[string]string
	secret map[string]bool // parameters String leaves out
}

// Resolve validates raw against d's declaration and fills in defaults.
func (d Def) Resolve(raw map[string]string) (Params, error) {
	known := map[string]Param{}
	for _, p := range d.Params {
		known[p.Name] = p
	}
	vals := map[string]string{}
	for k, v := range raw {
		p, ok := known[k]
		if !ok {
			if near := suggest.Closest(k, d.names()); near != "" {
				return Params{}, fmt.Errorf("workload %s has no parameter %q: did you mean %s? (it has: %s)", d.Name, k, near, d.paramNames())
			}
			return Params{}, fmt.Errorf("workload %s has no parameter %q (it has: %s)", d.Name, k, d.paramNames())
		}
		if err := p.check(v); err != nil {
			return Params{}, fmt.Errorf("workload %s: %w", d.Name, err)
		}
		vals[k] = v
	}
	var secret map[string]bool
	for _, p := range d.Params {
		if _, ok := vals[p.Name]; !ok {
			vals[p.Name] = p.Default
		}
		if p.Secret {
			if secret == nil {
				secret = map[string]bool{}
			}
			secret[p.Name] = true
		}
	}
	ps := Params{vals: vals, secret: secret}
	if d.Derive != nil {
		for k, v := range d.Derive(ps) {
			if cur, ok := vals[k]; ok && cur == "" {
				vals[k] = v
			}
		}
	}
	if d.Check != nil {
		if err := d.Check(ps); err != nil {
			return Params{}, fmt.Errorf("workload %s: %w", d.Name, err)
		}
	}
	return ps, nil
}

func (d Def) paramNames() string {
	var names []string
	for _, p := range d.Params {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (p Param) check(v string) error {
	if p.Secret {
		// never quoted, whatever its kind: errors end up in failure
		// records and logs
		if err := p.checkValue(v); err != nil {
			return fmt.Errorf("parameter %s (secret, not shown) is not valid", p.Name)
		}
		return nil
	}
	return p.checkValue(v)
}

func (p Param) checkValue(v string) error {
	bad := func(want string) error {
		return fmt.Errorf("parameter %s=%q: want %s", p.Name, v, want)
	}
	tooLarge := fmt.Errorf("parameter %s=%q is too large", p.Name, v)
	var x float64
	switch p.Kind {
	case Int:
		n, err := strconv.ParseInt(v, 10, 64)
		if errors.Is(err, strconv.ErrRange) && n > 0 {
			return tooLarge
		}
		if err != nil {
			return bad("a whole number")
		}
		x = float64(n)
	case Float:
		f, err := strconv.ParseFloat(v, 64)
		if (err == nil || errors.Is(err, strconv.ErrRange)) && math.IsInf(f, 1) {
			return tooLarge
		}
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return bad("a number")
		}
		x = f
	case Size:
		n, err := spec.ParseSize(v)
		if errors.Is(err, spec.ErrTooLarge) {
			return tooLarge
		}
		if err != nil {
			return bad("a size such as 4k, 64m or 1g")
		}
		x = float64(n)
	case Duration:
		d, err := spec.ParseDuration(v)
		if errors.Is(err, spec.ErrTooLarge) {
			return tooLarge
		}
		if err != nil {
			return bad("a duration such as 10s or 500ms")
		}
		x = d.Seconds()
	case Bool:
		if _, err := strconv.ParseBool(v); err != nil {
			return bad("true or false")
		}
		return nil
	case Enum:
		for _, e := range p.Enum {
			if v == e {
				return nil
			}
		}
		return bad("one of " + strings.Join(p.Enum, "|"))
	case String:
		return nil
	case ListenIP:
		ip := net.ParseIP(v)
		if ip == nil || ip.IsUnspecified() || ip.IsMulticast() {
			return bad("one IP address of this machine to listen on (not 0.0.0.0 or ::)")
		}
		return nil
	}
	if x < p.Min {
		return fmt.Errorf("parameter %s=%q is below its minimum %v", p.Name, v, p.Min)
	}
	if p.Max != 0 && x > p.Max {
		return fmt.Errorf("parameter %s=%q is above its maximum %v", p.Name, v, p.Max)
	}
	return nil
}

// Raw returns the parameters as a map (a copy).
func (p Params) Raw() map[string]string {
	m := make(map[string]string, len(p.vals))
	for k, v := range p.vals {
		m[k] = v
	}
	return m
}

// String is the canonical "k=v,k=v" form stored with samples. Secret
// parameters are left out.
func (p Params) String() string {
	if len(p.secret) == 0 {
		return spec.Canonical(p.vals)
	}
	pub := make(map[string]string, len(p.vals))
	for k, v := range p.vals {
		if !p.secret[k] {
			pub[k] = v
		}
	}
	return spec.Canonical(pub)
}

// Accessors. They are only called for declared parameters, already validated
// by Resolve, so parse errors cannot happen; an undeclared name yields zero.

func (p Params) Str(name string) string { return p.vals[name] }

func (p Params) Int(name string) int {
	n, _ := strconv.Atoi(p.vals[name])
	return n
}

func (p Params) Float(name string) float64 {
	f, _ := strconv.ParseFloat(p.vals[name], 64)
	return f
}

func (p Params) Size(name string) int64 {
	n, _ := spec.ParseSize(p.vals[name])
	return n
}

func (p Params) Duration(name string) time.Duration {
	d, _ := spec.ParseDuration(p.vals[name])
	return d
}

func (p Params) Bool(name string) bool {
	b, _ := strconv.ParseBool(p.vals[name])
	return b
}

// FromString parses a canonical "k=v,k=v" string and resolves it against d;
// the agent receives its parameters this way. Secret parameters are
// refused (FromArgs).
func (d Def) FromString(s string) (Params, error) { return d.FromArgs(s, nil) }

// FromArgs is what the agent runs: the parameters of its arguments (the
// canonical "k=v,k=v" form) and the secrets it read on its standard
// input, resolved together. A secret parameter in args is refused (secrets never travel
// in an argv, which /proc shows to everyone and failure records keep), and
// so is anything but a secret parameter in secrets.
func (d Def) FromArgs(args string, secrets map[string]string) (Params, error) {
	raw := map[string]string{}
	if strings.TrimSpace(args) != "" {
		sp, err := spec.Parse(d.Name + ":" + args)
		if err != nil {
			return Params{}, err
		}
		raw = sp.Params
	}
	secret := map[string]bool{}
	for _, p := range d.Params {
		if p.Secret {
			secret[p.Name] = true
		}
	}
	for k := range raw {
		if secret[k] {
			return Params{}, fmt.Errorf("workload %s: parameter %s is a secret: it is given on the agent's standard input, never in its arguments", d.Name, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(secrets)) {
		if !secret[k] {
			return Params{}, fmt.Errorf("workload %s: %q on the standard input is not one of its secret parameters", d.Name, k)
		}
		raw[k] = secrets[k]
	}
	return d.Resolve(raw)
}

// Registry looks workloads up by name.
type Registry map[string]Def

// NewRegistry builds a registry, rejecting duplicate or malformed defs.
// A def is Internal exactly when its name starts with '_'.
func NewRegistry(defs ...Def) (Registry, error) {
	r := Registry{}
	for _, d := range defs {
		if d.Name == "" || (d.Agent == nil) == (d.Host == nil) {
			return nil, fmt.Errorf("workload %q must have a name and exactly one of Agent and Host", d.Name)
		}
		if d.Internal != strings.HasPrefix(d.Name, "_") {
			return nil, fmt.Errorf("workload %q: internal workloads, and only they, have names starting with '_'", d.Name)
		}
		if _, dup := r[d.Name]; dup {
			return nil, fmt.Errorf("workload %q registered twice", d.Name)
		}
		r[d.Name] = d
	}
	return r, nil
}

// Lookup finds a workload a user may name (on the command line, in a
// study file, in a stored plan) or says which exist. Internal workloads
// are unknown to it, with the same error as a name never registered.
func (r Registry) Lookup(name string) (Def, error) {
	d, ok := r[name]
	if !ok || d.Internal {
		return Def{}, fmt.Errorf("unknown workload %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	return d, nil
}

// LookupAgent finds any workload, the internal halves included: only for
// the agent's entry point ("isobench agent run"), which host-driven
// workloads use to start their hidden halves in instances.
func (r Registry) LookupAgent(name string) (Def, error) {
	d, ok := r[name]
	if !ok {
		return Def{}, fmt.Errorf("unknown workload %q", name)
	}
	return d, nil
}

// Names lists the workloads a user may name, sorted (not the internal
// ones).
func (r Registry) Names() []string {
	var n []string
	for k, d := range r {
		if !d.Internal {
			n = append(n, k)
		}
	}
	sort.Strings(n)
	return n
}

// Label is how a workload with its stored parameters (the canonical
// "k=v,k=v" form, Params.String) is shown to users: its name and, in
// canonical order, only the parameters that differ from their defaults
// (a computed default as Derive computes it from the others; values
// compared as their kind reads them, so duration=10 is the default 10s)
// and that play a part (Def.Irrelevant): "scp:file=4m,neighbours=1",
// "cpu" for every default. A workload r does not know, or parameters it
// cannot resolve (a run stored by another version), are shown in full.
// Stores, resume and merge key on the full string, never on this.
func (r Registry) Label(name, params string) string {
	d, ok := r[name]
	if !ok {
		if params == "" {
			return name
		}
		return name + ":" + params
	}
	return d.Label(params)
}

// Label is d with its stored parameters as shown to users (Registry.Label).
func (d Def) Label(params string) string {
	name := d.Name
	if params == "" {
		return name
	}
	full := name + ":" + params
	sp, err := spec.Parse(full)
	if err != nil {
		return full
	}
	decl := map[string]Param{}
	for _, p := range d.Params {
		decl[p.Name] = p
	}
	// a value written as its default is as good as not given (and an
	// empty default, such as file= beside tree=, is no valid value of
	// its kind to resolve)
	given := map[string]string{}
	for k, v := range sp.Params {
		if p, ok := decl[k]; !ok || v != p.Default {
			given[k] = v
		}
	}
	ps, err := d.Resolve(given)
	if err != nil {
		return full
	}
	drop := map[string]bool{}
	if d.Irrelevant != nil {
		for _, k := range d.Irrelevant(ps) {
			drop[k] = true
		}
	}
	shown := map[string]string{}
	for k, v := range given {
		if drop[k] {
			continue
		}
		// the value k would have if it were not given, the others as
		// they are
		rest := make(map[string]string, len(given))
		for k2, v2 := range given {
			if k2 != k {
				rest[k2] = v2
			}
		}
		if dp, err := d.Resolve(rest); err == nil && decl[k].same(v, dp.Str(k)) {
			continue
		}
		shown[k] = v
	}
	if len(shown) == 0 {
		return name
	}
	return name + ":" + spec.Canonical(shown)
}

// same reports whether a and b are the same value of p, as its kind reads
// them (10 and 10s, 1024 and 1k).
func (p Param) same(a, b string) bool {
	if a == b {
		return true
	}
	switch p.Kind {
	case Int, Float:
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		return err1 == nil && err2 == nil && x == y
	case Size:
		x, err1 := spec.ParseSize(a)
		y, err2 := spec.ParseSize(b)
		return err1 == nil && err2 == nil && x == y
	case Duration:
		x, err1 := spec.ParseDuration(a)
		y, err2 := spec.ParseDuration(b)
		return err1 == nil && err2 == nil && x == y
	case Bool:
		x, err1 := strconv.ParseBool(a)
		y, err2 := strconv.ParseBool(b)
		return err1 == nil && err2 == nil && x == y
	}
	return false
}

// SweepSep separates the values of a swept parameter: "threads=1|2|4" runs
// the workload once per value. '|' cannot be confused with the ',' between
// parameters (spec.Parse splits on commas) and no parameter value uses it.
const SweepSep = "|"

// SweepTag is the sample tag naming the swept parameter(s) of a job, so
// reports can plot a cell's metric against it (e.g. sweep=threads).
const SweepTag = "sweep"

// Variant is one point of a sweep: the raw parameters with one value per
// swept parameter, and the names of the parameters that were swept
// (sorted; empty when nothing was swept).
type Variant struct {
	Raw   map[string]string
	Sweep []string
}

// Tags returns the sample tags recording the sweep (nil without one).
func (v Variant) Tags() map[string]string {
	if len(v.Sweep) == 0 {
		return nil
	}
	return map[string]string{SweepTag: strings.Join(v.Sweep, ",")}
}

// Expand turns raw parameters in which some values list alternatives
// separated by SweepSep ("threads=1|2|4") into one parameter set per
// combination, in the order the values were written; with several swept
// parameters the first by name varies slowest. Without a sweep it returns
// raw itself as the only variant. An empty alternative or a value given
// twice is an error.
func Expand(raw map[string]string) ([]Variant, error) {
	var swept []string
	values := map[string][]string{}
	for k, v := range raw {
		if !strings.Contains(v, SweepSep) {
			continue
		}
		seen := map[string]bool{}
		for _, x := range strings.Split(v, SweepSep) {
			x = strings.TrimSpace(x)
			if x == "" {
				return nil, fmt.Errorf("parameter %s=%q: empty value in a sweep (want e.g. %s=1|2|4)", k, v, k)
			}
			if seen[x] {
				return nil, fmt.Errorf("parameter %s=%q: value %q given twice in a sweep", k, v, x)
			}
			seen[x] = true
			values[k] = append(values[k], x)
		}
		swept = append(swept, k)
	}
	sort.Strings(swept)
	out := []Variant{{Raw: map[string]string{}}}
	for k, v := range raw {
		if _, ok := values[k]; !ok {
			out[0].Raw[k] = v
		}
	}
	for _, k := range swept {
		var next []Variant
		for _, base := range out {
			for _, x := range values[k] {
				r := make(map[string]string, len(base.Raw)+1)
				for bk, bv := range base.Raw {
					r[bk] = bv
				}
				r[k] = x
				next = append(next, Variant{Raw: r})
			}
		}
		out = next
	}
	if len(swept) > 0 {
		for i := range out {
			out[i].Sweep = swept
		}
	}
	return out, nil
}

// DefaultEstimate is a plan's estimate of a repetition of a workload that
// declares none.
const DefaultEstimate = 10 * time.Second

// EstimateOf is d's estimate of one repetition with p at one instance.
func (d Def) EstimateOf(p Params) time.Duration {
	if d.Estimate != nil {
		return d.Estimate(p)
	}
	return DefaultEstimate
}

// Seconds is s seconds as a Duration.
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// DurationPlus is the Estimate of a workload that runs for its duration
// parameter, plus extra for its setup.
func DurationPlus(extra time.Duration) func(Params) time.Duration {
	return func(p Params) time.Duration { return p.Duration("duration") + extra }
}

// names are d's parameter names in declaration order.
func (d Def) names() []string {
	var out []string
	for _, p := range d.Params {
		out = append(out, p.Name)
	}
	return out
}
