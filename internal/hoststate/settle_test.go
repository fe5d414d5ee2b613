package hoststate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeHost is a host whose clock moves only when the settler waits: every
// wait returns at once, the clock advanced by its length.
type fakeHost struct {
	now      time.Time
	tw       int // TIME_WAIT sockets now
	dirty    int64
	procs    []Proc
	onWait   func(h *fakeHost) // called after every wait
	waits    int
	syncs    int
	syncHang bool
	hang     chan struct{}
}

func (h *fakeHost) uptime() uint64 {
	return uint64(h.now.Sub(time.Unix(0, 0)) / (time.Second / clockTicks))
}

func (h *fakeHost) settler(o Options) *Settler {
	h.hang = make(chan struct{})
	o.now = func() time.Time { return h.now }
	o.after = func(d time.Duration) <-chan time.Time {
		if d == DefaultSyncWait && !h.syncHang {
			return nil // a sync that returns is waited for
		}
		h.now = h.now.Add(d)
		h.waits++
		if h.onWait != nil {
			h.onWait(h)
		}
		c := make(chan time.Time, 1)
		c <- h.now
		return c
	}
	o.sync = func() {
		h.syncs++
		if h.syncHang {
			<-h.hang
		}
	}
	o.read = func(bool) (Snapshot, error) {
		return Snapshot{TCP: map[string]int{"TIME_WAIT": h.tw}, TimeWait: h.tw, DirtyKB: h.dirty, Uptime: h.uptime(),
			Procs: append([]Proc(nil), h.procs...), EphemeralPorts: -1, EphemeralRange: -1, Orphans: -1, TCPMemPages: -1,
			WritebackKB: 0, CachedKB: -1, MemTotalKB: -1, Load1: -1}, nil
	}
	o.self = 1000
	o.selfCgroup = "0::/user.slice/user-0.slice/session-3.scope\n"
	return NewSettler(o)
}

// rep runs one repetition on the fake host: it lasts d and leaves tw
// TIME_WAIT sockets more.
func (h *fakeHost) rep(st *Settler, d time.Duration, tw int) {
	h.now = h.now.Add(d)
	h.tw += tw
	st.Done()
}

func TestSettleWaitsForTheTimeWaitOfThePreviousRepetition(t *testing.T) {
	h := &fakeHost{now: time.Unix(1000, 0), tw: 200}
	s := h.settler(Options{})
	first, err := s.Settle(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if h.waits != 0 || first.TCP["TIME_WAIT"] != 200 {
		t.Fatalf("the first repetition waited %d times (nothing of the run's to drain) / state %v", h.waits, first.TCP)
	}
	h.rep(s, 2*time.Second, 8000)
	// the sockets expire in steps while Settle waits
	h.onWait = func(h *fakeHost) {
		if h.tw > 1000 {
			h.tw -= 2000
		}
	}
	st, err := s.Settle(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	// 8200 → 6200 → 4200 → 2200 → 200: down to the level before plus the slack
	if st.TCP["TIME_WAIT"] > 200+DefaultSlack || h.waits != 4 {
		t.Errorf("started with %d TIME_WAIT after %d waits", st.TCP["TIME_WAIT"], h.waits)
	}
	if st.Waited != 4*DefaultPoll || len(st.Undrained) != 0 {
		t.Errorf("waited %v, undrained %q", st.Waited, st.Undrained)
	}
	if st.Tags()[TagPrefix+"waited_ms"] != "2000" {
		t.Errorf("tags %v", st.Tags())
	}
}

func TestSettleGivesUpWhenTheRepetitionsOwnHaveExpired(t *testing.T) {
	h := &fakeHost{now: time.Unix(1000, 0), tw: 200}
	s := h.settler(Options{})
	if _, err := s.Settle(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	h.rep(s, 10*time.Second, 8000)
	h.now = h.now.Add(20 * time.Second) // the runner's own bookkeeping
	st, err := s.Settle(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	// someone else keeps 8,200 in TIME_WAIT: the wait ends when all of
	// the previous repetition's own have expired, Linger after its end
	if waited := st.Waited; waited != DefaultLinger-20*time.Second {
		t.Errorf("waited %v, want %v", waited, DefaultLinger-20*time.Second)
	}
	if len(st.Undrained) != 1 || !strings.Contains(st.Undrained[0], "8200 TIME_WAIT sockets are left") {
		t.Errorf("undrained %q", st.Undrained)
	}
}

func TestSettleDoesNotWaitForOthersSockets(t *testing.T) {
	h := &fakeHost{now: time.Unix(1000, 0), tw: 200}
	s := h.settler(Options{})
	if _, err := s.Settle(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	h.rep(s, time.Second, 300) // the repetition left few
	h.tw = 30000               // then another program made many
	st, err := s.Settle(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if h.waits != 0 || st.TCP["TIME_WAIT"] != 30000 {
		t.Errorf("waited %d times for sockets the run did not make", h.waits)
	}
}

func TestSettleRecordsLeftoverProcesses(t *testing.T) {
	h := &fakeHost{now: time.Unix(1000, 0)}
	s := h.settler(Options{})
	before := Proc{PID: 10, Comm: "sshd", Start: h.uptime() - 500}
	h.procs = []Proc{before}
	if _, err := s.Settle(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(time.Second)
	orphan := Proc{PID: 20, PPID: 1, Comm: "apache2", Start: h.uptime(), Cgroup: "0::/user.slice/user-0.slice/session-3.scope\n"}
	self := Proc{PID: 1000, PPID: 999, Comm: "isobench", Start: h.uptime()}
	agent := Proc{PID: 1001, PPID: 1000, Comm: "isobench", Start: h.uptime()}
	grandchild := Proc{PID: 1002, PPID: 1001, Comm: "sleep", Start: h.uptime()}
	others := Proc{PID: 40, PPID: 39, Comm: "go", Start: h.uptime()} // another program's, with its parent
	// daemons another session started meanwhile: orphans too, in a
	// cgroup of their own
	daemon := Proc{PID: 50, PPID: 1, Comm: "etcd", Start: h.uptime(), Cgroup: "0::/system.slice/etcd.service\n"}
	named := Proc{PID: 60, PPID: 1, Comm: "sleep", Start: h.uptime(), Cgroup: "0::/isobench/r1-3\n"}
	h.procs = append(h.procs, orphan, self, agent, grandchild, others, daemon, named)
	h.rep(s, time.Second, 0)
	h.now = h.now.Add(time.Second)
	between := Proc{PID: 30, PPID: 1, Comm: "cron", Start: h.uptime()} // started between repetitions
	h.procs = append(h.procs, between)
	st, err := s.Settle(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, p := range st.Leftovers {
		got = append(got, p.PID)
	}
	if !slices.Equal(got, []int{20, 1001, 1002, 60}) {
		t.Errorf("leftovers %v, want the orphans in this process's cgroup or isobench's and its descendants started during the repetition", st.Leftovers)
	}
	if st.Waited != DefaultLeftoverWait {
		t.Errorf("waited %v for it to end, want %v", st.Waited, DefaultLeftoverWait)
	}
	tags := st.Tags()
	if tags[TagPrefix+"leftovers"] != "4" || tags[TagPrefix+"leftover_names"] != "apache2,isobench,sleep" || !strings.Contains(tags[TagPrefix+"undrained"], "apache2") {
		t.Errorf("tags %v", tags)
	}

	// one that ends while Settle waits is not left over
	h.rep(s, time.Second, 0)
	h.onWait = func(h *fakeHost) { h.procs = []Proc{before, self, between, others, daemon} }
	st, err = s.Settle(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Leftovers) != 0 || st.Waited != DefaultPoll {
		t.Errorf("leftovers %v after %v", st.Leftovers, st.Waited)
	}
}

func TestSettleSyncsDirtyPages(t *testing.T) {
	h := &fakeHost{now: time.Unix(1000, 0), dirty: 1 << 10}
	s := h.settler(Options{})
	if _, err := s.Settle(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if h.syncs != 0 {
		t.Errorf("synced %d times for 1 MiB of dirty pages", h.syncs)
	}
	h.dirty = 1 << 20
	if _, err := s.Settle(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if h.syncs != 1 {
		t.Errorf("synced %d times for 1 GiB of dirty pages", h.syncs)
	}
	// pages dirtied while the sockets of the repetition before expire
	// are written back too: the sync comes last
	h.dirty = 0
	h.rep(s, time.Second, 5000)
	h.onWait = func(h *fakeHost) { h.tw, h.dirty = 0, 1<<20 }
	if _, err := s.Settle(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if h.waits == 0 || h.syncs != 2 {
		t.Errorf("after %d waits, synced %d times, want the second sync after them", h.waits, h.syncs)
	}
	h.onWait = nil
	h.syncHang = true
	st, err := s.Settle(t.Context(), true)
	close(h.hang)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Undrained) != 1 || !strings.Contains(st.Undrained[0], "sync did not finish") {
		t.Errorf("a sync that did not return: undrained %q", st.Undrained)
	}
}

func TestSettleStopsWithItsContext(t *testing.T) {
	h := &fakeHost{now: time.Unix(1000, 0), tw: 0}
	s := h.settler(Options{})
	if _, err := s.Settle(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	h.rep(s, time.Second, 20000)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Settle(ctx, true); !errors.Is(err, context.Canceled) {
		t.Errorf("Settle on a cancelled run = %v, want context.Canceled", err)
	}
}

// TestSocketsOnlyForNetworkRepetitions: a repetition that uses no network
// does not wait for the TIME_WAIT sockets the previous one left (they do
// not slow a CPU or disk repetition, and on a busy host others' sockets
// would hold it up for nothing); one that does waits as before.
func TestSocketsOnlyForNetworkRepetitions(t *testing.T) {
	for _, sockets := range []bool{false, true} {
		h := &fakeHost{now: time.Unix(1000, 0), tw: 200}
		s := h.settler(Options{})
		if _, err := s.Settle(t.Context(), sockets); err != nil {
			t.Fatal(err)
		}
		h.rep(s, 2*time.Second, 8000)
		h.onWait = func(h *fakeHost) { h.tw = max(200, h.tw-2000) }
		st, err := s.Settle(t.Context(), sockets)
		if err != nil {
			t.Fatal(err)
		}
		if waited := h.waits > 0; waited != sockets {
			t.Errorf("sockets=%v: waited %d times (%v)", sockets, h.waits, st.Waited)
		}
		if st.TCP["TIME_WAIT"] == 0 {
			t.Errorf("sockets=%v: the state was not recorded: %v", sockets, st.TCP)
		}
	}
}
