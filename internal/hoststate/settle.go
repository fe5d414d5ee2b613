package hoststate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of Options, used when the corresponding field is zero.
const (
	// DefaultLinger: Linux keeps a closed socket in TIME_WAIT for 60 s
	// (TCP_TIMEWAIT_LEN, not tunable), so 61 s after a repetition ended
	// none of its TIME_WAIT sockets is left; any still there were made
	// by someone else after it ended.
	DefaultLinger       = 61 * time.Second
	DefaultSlack        = 1000
	DefaultLeftoverWait = 5 * time.Second
	DefaultSyncAbove    = 16 << 10 // KiB
	DefaultSyncWait     = 30 * time.Second
	DefaultPoll         = 500 * time.Millisecond
)

// Options tune a Settler; the zero value means the defaults.
type Options struct {
	// Proc is the proc file system's root (default /proc).
	Proc string
	// Linger bounds the wait for TIME_WAIT sockets: at most this long
	// after the previous repetition ended (default DefaultLinger).
	Linger time.Duration
	// Slack is how many TIME_WAIT sockets above the level the previous
	// repetition started from are let be (the larger of Slack and a
	// tenth of that level; default DefaultSlack): other programs on the
	// host open and close connections too.
	Slack int
	// LeftoverWait bounds the wait for processes started during earlier
	// repetitions to end (default DefaultLeftoverWait).
	LeftoverWait time.Duration
	// SyncAbove: dirty and writeback pages (KiB) from which Settle writes
	// them back with sync(2) before a repetition (default
	// DefaultSyncAbove; the kernel writes smaller amounts back within
	// its own 30 s).
	SyncAbove int64
	// SyncWait bounds that sync (default DefaultSyncWait; the sync goes
	// on by itself).
	SyncWait time.Duration
	// Poll is how often the drain looks again (default DefaultPoll).
	Poll time.Duration

	// seams for tests
	read       func(full bool) (Snapshot, error)
	sync       func()
	now        func() time.Time
	after      func(time.Duration) <-chan time.Time
	self       int
	selfCgroup string
}

// State is the host's state a repetition starts from, after the drain.
type State struct {
	Snapshot
	// Leftovers are the processes started during an earlier repetition
	// of the run that still run.
	Leftovers []Proc
	// Waited is how long Settle waited for the host to drain.
	Waited time.Duration
	// Undrained says, one sentence each, what did not drain within its
	// bound.
	Undrained []string
}

// interval is one repetition's span in clock ticks after boot.
type interval struct{ start, end uint64 }

// Settler is asked before every repetition of a run (Settle) and told
// when it ends (Done). Before each repetition it writes dirty pages back
// (sync, from SyncAbove), waits, bounded, for what the previous
// repetition left to go: its TIME_WAIT sockets, when it ended with more
// than it started from (down to that level plus Slack, and never past
// Linger after it ended, when all of its own have expired: what is still
// there then is someone else's), and processes started during earlier
// repetitions (LeftoverWait), and returns the state the repetition starts
// from. Every platform gets the same treatment. It resets nothing it did
// not make: TIME_WAIT sockets cannot be cleared without changing the
// host's TCP settings, and no process is killed (what is left is recorded
// and flagged instead). The first repetition of a run does not wait: what
// it finds was left by no repetition of the run.
// Safe for use by one runner at a time.
type Settler struct {
	o Options

	mu       sync.Mutex
	level    int       // TIME_WAIT the previous repetition started from; -1: none yet
	endLevel int       // TIME_WAIT when it ended; -1: unknown
	prevEnd  time.Time // when the previous repetition ended
	start    uint64    // the running repetition's start, clock ticks
	running  bool
	reps     []interval
}

// NewSettler returns a Settler for one run.
func NewSettler(o Options) *Settler {
	if o.Proc == "" {
		o.Proc = "/proc"
	}
	if o.Linger <= 0 {
		o.Linger = DefaultLinger
	}
	if o.Slack <= 0 {
		o.Slack = DefaultSlack
	}
	if o.LeftoverWait <= 0 {
		o.LeftoverWait = DefaultLeftoverWait
	}
	if o.SyncAbove <= 0 {
		o.SyncAbove = DefaultSyncAbove
	}
	if o.SyncWait <= 0 {
		o.SyncWait = DefaultSyncWait
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.read == nil {
		root := o.Proc
		o.read = func(full bool) (Snapshot, error) {
			if full {
				return Read(root)
			}
			return readLight(root)
		}
	}
	if o.sync == nil {
		o.sync = syncAll
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.after == nil {
		o.after = time.After
	}
	if o.self == 0 {
		o.self = os.Getpid()
		if b, err := os.ReadFile(filepath.Join(o.Proc, "self/cgroup")); err == nil {
			o.selfCgroup = string(b)
		}
	}
	return &Settler{o: o, level: -1, endLevel: -1}
}

// readLight reads what the drain polls: sockstat's TIME_WAIT count, dirty
// and writeback pages, the uptime and the processes.
func readLight(root string) (Snapshot, error) {
	s := Snapshot{TimeWait: -1, Orphans: -1, TCPMemPages: -1, EphemeralPorts: -1, EphemeralRange: -1,
		DirtyKB: -1, WritebackKB: -1, CachedKB: -1, MemTotalKB: -1, Load1: -1}
	if f, err := os.Open(filepath.Join(root, "net/sockstat")); err == nil {
		if st, err := ParseSockstat(f); err == nil {
			s.TimeWait = st.TimeWait
		}
		f.Close()
	}
	if f, err := os.Open(filepath.Join(root, "meminfo")); err == nil {
		if m, err := ParseMeminfo(f); err == nil {
			s.DirtyKB, s.WritebackKB = m["Dirty"], m["Writeback"]
		}
		f.Close()
	}
	if b, err := os.ReadFile(filepath.Join(root, "uptime")); err == nil {
		s.Uptime, _ = ParseUptime(string(b))
	}
	procs, err := readProcs(root)
	s.Procs = procs
	return s, err
}

// Settle lets what earlier repetitions left drain, within its bounds, and
// returns the state the next repetition starts from. sockets says the next
// repetition uses the network: only then does it wait for TIME_WAIT
// sockets (a CPU or disk repetition is not slowed by them, and on a busy
// host others' sockets would make it wait for nothing); dirty pages and
// leftover processes are settled for every repetition. It fails only
// when ctx ends or the host's state cannot be read at all.
func (st *Settler) Settle(ctx context.Context, sockets bool) (State, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	o := st.o
	begin := o.now()
	var out State
	s, err := o.read(false)
	if err != nil && len(s.Procs) == 0 && s.TimeWait < 0 {
		return out, err
	}
	// TIME_WAIT: only when the previous repetition left more of them
	// than it found (its own, as far as the host can tell), down to the
	// level it started from, and never past the moment all of its own
	// have expired
	target := -1
	var twDeadline time.Time
	if sockets && st.level >= 0 && st.endLevel >= 0 && !st.prevEnd.IsZero() {
		slack := max(o.Slack, st.level/10)
		if st.endLevel-st.level > slack {
			target = st.level + slack
			twDeadline = st.prevEnd.Add(o.Linger)
		}
	}
	leftDeadline := begin.Add(o.LeftoverWait)
	for {
		now := o.now()
		twDone := target < 0 || s.TimeWait < 0 || s.TimeWait <= target || !now.Before(twDeadline)
		leftDone := len(st.leftovers(s.Procs)) == 0 || !now.Before(leftDeadline)
		if twDone && leftDone {
			break
		}
		if ctx.Err() != nil {
			return out, fmt.Errorf("hoststate: waiting for the host to drain: %w", context.Cause(ctx))
		}
		select {
		case <-ctx.Done():
			return out, fmt.Errorf("hoststate: waiting for the host to drain: %w", context.Cause(ctx))
		case <-o.after(o.Poll):
		}
		if s, err = o.read(false); err != nil && len(s.Procs) == 0 && s.TimeWait < 0 {
			return out, err
		}
	}
	// dirty pages last, right before the repetition: whatever was
	// written while the sockets expired is on disk too
	if s.DirtyKB+s.WritebackKB >= o.SyncAbove {
		if synced, err := st.sync(ctx); err != nil {
			return out, err
		} else if !synced {
			out.Undrained = append(out.Undrained, fmt.Sprintf("dirty pages: sync did not finish within %v", o.SyncWait))
		}
	}
	full, err := o.read(true)
	if err != nil {
		return out, err
	}
	out.Snapshot = full
	out.Leftovers = st.leftovers(full.Procs)
	out.Waited = o.now().Sub(begin)
	if tw := full.TimeWait; target >= 0 && tw > target {
		out.Undrained = append(out.Undrained, fmt.Sprintf("%d TIME_WAIT sockets are left (the previous repetition started from %d and ended with %d); its own had all expired %v after it ended", tw, st.level, st.endLevel, o.Linger))
	}
	if n := len(out.Leftovers); n > 0 {
		out.Undrained = append(out.Undrained, fmt.Sprintf("%d process(es) started during earlier repetitions still run after %v: %s", n, o.LeftoverWait, strings.Join(names(out.Leftovers, 5), ", ")))
	}
	st.level = full.TimeWait
	st.start = full.Uptime
	st.running = true
	return out, nil
}

// Done marks the end of the repetition the last Settle was for.
func (st *Settler) Done() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.running {
		return
	}
	st.running = false
	st.prevEnd = st.o.now()
	s, _ := st.o.read(false)
	st.endLevel = s.TimeWait
	if s.Uptime == 0 || s.Uptime < st.start {
		return // no clock: leftovers cannot be told apart
	}
	st.reps = append(st.reps, interval{st.start, s.Uptime})
}

// leftovers are the processes in procs that started during an earlier
// repetition and are either descendants of this process or orphans (their
// parent is pid 1: what an instance's processes become when it is closed
// and they are not) in this process's cgroups or below them, or in a
// cgroup named for isobench; this process is left out. Other programs'
// processes that merely started meanwhile have a parent of their own, or
// a cgroup elsewhere, and are not counted.
func (st *Settler) leftovers(procs []Proc) []Proc {
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.PID] = p.PPID
	}
	selfCg := ParseCgroup(st.o.selfCgroup)
	ours := func(p Proc) bool {
		if p.PPID == 1 {
			return len(selfCg) == 0 || strings.Contains(p.Cgroup, "isobench") || within(ParseCgroup(p.Cgroup), selfCg)
		}
		for pid, n := p.PPID, 0; pid > 1 && n < len(procs); pid, n = parent[pid], n+1 {
			if pid == st.o.self {
				return true
			}
		}
		return false
	}
	var out []Proc
	for _, p := range procs {
		if p.PID == st.o.self {
			continue
		}
		for _, r := range st.reps {
			if p.Start >= r.start && p.Start <= r.end {
				if ours(p) {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}

// sync writes dirty pages back, giving up waiting after SyncWait (the
// sync goes on by itself).
func (st *Settler) sync(ctx context.Context) (bool, error) {
	done := make(chan struct{})
	go func() { st.o.sync(); close(done) }()
	select {
	case <-done:
		return true, nil
	case <-st.o.after(st.o.SyncWait):
		return false, nil
	case <-ctx.Done():
		return false, fmt.Errorf("hoststate: sync: %w", context.Cause(ctx))
	}
}

// names are the distinct command names of ps, sorted, at most limit.
func names(ps []Proc, limit int) []string {
	var out []string
	for _, p := range ps {
		if !slices.Contains(out, p.Comm) {
			out = append(out, p.Comm)
		}
	}
	slices.Sort(out)
	if len(out) > limit {
		out = append(out[:limit], "…")
	}
	return out
}

// Tags are the state as sample tags (TagPrefix + key); unknown values
// are left out.
func (s State) Tags() map[string]string {
	t := map[string]string{}
	put := func(k string, v int64) {
		if v >= 0 {
			t[TagPrefix+k] = strconv.FormatInt(v, 10)
		}
	}
	if s.TCP != nil {
		put("tcp_established", int64(s.TCP["ESTABLISHED"]))
		put("tcp_time_wait", int64(s.TCP["TIME_WAIT"]))
		put("tcp_close_wait", int64(s.TCP["CLOSE_WAIT"]))
		put("tcp_closing", int64(s.TCP["FIN_WAIT1"]+s.TCP["FIN_WAIT2"]+s.TCP["CLOSING"]+s.TCP["LAST_ACK"]))
		put("tcp_syn", int64(s.TCP["SYN_SENT"]+s.TCP["SYN_RECV"]+s.TCP["NEW_SYN_RECV"]))
	} else {
		put("tcp_time_wait", int64(s.TimeWait))
	}
	put("tcp_orphans", int64(s.Orphans))
	put("tcp_mem_pages", int64(s.TCPMemPages))
	put("ephemeral_ports", int64(s.EphemeralPorts))
	put("ephemeral_range", int64(s.EphemeralRange))
	put("dirty_kb", s.DirtyKB)
	put("writeback_kb", s.WritebackKB)
	put("cached_kb", s.CachedKB)
	put("mem_total_kb", s.MemTotalKB)
	if s.Load1 >= 0 {
		t[TagPrefix+"load1"] = strconv.FormatFloat(s.Load1, 'f', 2, 64)
	}
	if s.Procs != nil {
		put("leftovers", int64(len(s.Leftovers)))
		if len(s.Leftovers) > 0 {
			t[TagPrefix+"leftover_names"] = strings.Join(names(s.Leftovers, 5), ",")
		}
	}
	put("waited_ms", s.Waited.Milliseconds())
	if len(s.Undrained) > 0 {
		t[TagPrefix+"undrained"] = strings.Join(s.Undrained, "; ")
	}
	return t
}
