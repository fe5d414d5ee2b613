package platform

import "context"

// SweepEnv is what a factory's Sweep gets: where isobench keeps things on
// this host.
type SweepEnv struct {
	// StateDirs are the state directories to search (Env.StateDir of the
	// runs that may have left something: the recorded runs' and those the
	// user names).
	StateDirs []string
	// TempDirs are the temporary directories to search ($TMPDIR of the
	// recorded runs and of this process): native's scratch directories.
	TempDirs []string
	// Clean says the sweep is 'isobench clean' itself, not the one before
	// a run: a platform may also look where asking takes seconds or is
	// not this run's business (a cluster's API server, a local cluster's
	// node).
	Clean bool
}

// Leftover is one thing a platform's instances may have left on this
// host, as its factory's Sweep lists it: an instance of its engine, or a
// part that goes with one (Owner). A Sweep lists what exists, alive or
// not; the caller decides whose run is dead ('isobench clean', package
// cleanup) or compares the list before and after (the platform's tests).
type Leftover struct {
	// Kind says what it is: "lxd-instance", "veth", "dir", "cgroup"...
	// (cleanup removes containers and instances first, then processes,
	// mounts, links, cgroups and directories).
	Kind string
	Name string
	// Owner is the instance a part belongs to ("" for an instance): the
	// part goes with its instance, or, when the instance is gone, with
	// what its own token and lease say.
	Owner string
	// Token is the run token the object carries (the label
	// isobench.run), "" when it has none; SpecName is the name the run
	// gave the instance (Spec.Name, which holds the token too) when the
	// label is missing.
	Token, SpecName string
	// Judge, when not nil, is the platform's own verdict on an instance
	// whose life no run token tells (a QEMU VM's: the isobench process its
	// owner record names): whether it is dead, and why (for a live one, ""
	// or why it is kept: a record that fails the platform's checks is
	// never dead). Its parts go with it. nil: its token decides.
	Judge func() (dead bool, why string)
	// Untokened says the instance carries no run token by design (the
	// local platforms' ids are random) and Judge is nil: package cleanup
	// tells whose it is by what it left, its processes (parts of Kind
	// "process" with their PID: one whose parent is init outlived the
	// isobench that started it), its bridge lease (by Name) and its
	// StateDir (used only by dead runs).
	Untokened bool
	// StateDir is the state directory an Untokened instance's files are
	// in, "" for none.
	StateDir string
	// PID is a process's pid (Kind "process").
	PID int
	// Remove removes it; something already gone is no error. An instance
	// with no Remove is only the owner of its parts (the first part removed
	// says why).
	Remove func(ctx context.Context) error
}

// String is how a test lists it: "KIND NAME".
func (l Leftover) String() string { return l.Kind + " " + l.Name }

// NoLeftovers is the Sweep of a platform whose instances leave nothing on
// this host that another platform's Sweep does not list.
func NoLeftovers(context.Context, SweepEnv) ([]Leftover, error) { return nil, nil }
