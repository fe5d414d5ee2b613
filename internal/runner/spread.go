package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/workload"
)

// A spread run runs each cell of the matrix on one host instead of the
// whole matrix on every host, to finish sooner. A cell here is the
// runner's: one workload (with its parameters) at one instance count, with
// every platform of the run; all of a cell's platforms run on the same
// host, interleaved as always, so each comparison with the baseline stays
// on one machine. Cells are queued longest first (by their estimated time)
// and each host takes the next one whenever it is idle, so the run ends
// about when the busiest host does.
//
// A host lost during the run (dead, cut off, its platformd gone) takes no
// more cells; the cell it was running is recorded as failed on that host's
// platforms with the reason (its finished repetitions are kept), and the
// other hosts take the cells left. The cell is not moved to another host:
// its finished repetitions and their comparisons would then mix two
// machines in one cell (or, run again in full, count repetitions twice);
// 'isobench run --resume' runs its missing repetitions when wanted.

// SpreadHost is one host of a spread run with every platform of the plan
// opened there.
type SpreadHost struct {
	Name    string   // "local" or ssh://user@addr as given
	Targets []Target // the plan's targets on this host: label@host, tagged host=
}

// Spread runs a plan's cells across hosts.
type Spread struct {
	Hosts []*SpreadHost
	RunID int64     // the run's id in the store, for the hint to resume it
	Log   io.Writer // where hosts lost are told
	// Lost says why a platform's connection to its host is gone, nil
	// while it is up (remote.Lost).
	Lost func(platform.Platform) error
}

// spreadCell is one cell of the matrix: a job at one instance count.
type spreadCell struct {
	job Job
	n   int
	est time.Duration
}

// String is the cell as users read it: the workload with the parameters
// that differ from their defaults (workload.Def.Label).
func (c spreadCell) String() string {
	return fmt.Sprintf("%s ×%d", c.job.Def.Label(c.job.Params.String()), c.n)
}

// cellEstimate guesses how long a cell takes, to start the longest first:
// the workload's duration (5 s when it has none) and a second per instance
// to create and remove, for every repetition of every platform.
func cellEstimate(plan Plan, job Job, n int) time.Duration {
	d := 5 * time.Second
	for _, p := range job.Def.Params {
		if p.Name == "duration" && p.Kind == workload.Duration {
			if v := job.Params.Duration("duration"); v > 0 {
				d = v
			}
		}
	}
	return (d + time.Duration(n)*time.Second) * time.Duration((plan.Warmup+plan.Reps)*len(plan.Targets))
}

// spreading is what one Spread.Run shares between its hosts.
type spreading struct {
	sp     *Spread
	r      *Runner
	plan   Plan
	wctx   context.Context    // the run's context, cancelled on a fatal error
	cancel context.CancelFunc // cancels wctx

	mu        sync.Mutex // the progress counters, and Log (the progress display writes there too)
	doneCells int
	cur       []int // per host, the repetitions done of its current cell

	qmu   sync.Mutex
	queue []spreadCell // the cells no host has taken yet, longest first

	lost      []error // per host, why it was lost
	fatal     error   // the first error that ends the run
	fatalOnce sync.Once
}

// Run runs plan's cells across the hosts with r (Run is called for one
// cell at a time on each host at once: r's failures and instance names are
// shared, so names stay unique on engines two hosts share). Its error is
// as Run's: the cells that failed (*CellsFailed), joined with the hosts
// lost and the cells no host was left to run; or the first error that
// ends the run (interrupted, --fail-fast, the store).
func (sp *Spread) Run(ctx context.Context, r *Runner, plan Plan) error {
	if err := plan.Validate(); err != nil {
		return err
	}
	var cells []spreadCell
	for _, job := range plan.Jobs {
		for _, n := range plan.Instances {
			cells = append(cells, spreadCell{job: job, n: n, est: cellEstimate(plan, job, n)})
		}
	}
	s := &spreading{sp: sp, r: r, plan: plan, cur: make([]int, len(sp.Hosts)), lost: make([]error, len(sp.Hosts))}
	s.queue = slices.Clone(cells)
	slices.SortStableFunc(s.queue, func(a, b spreadCell) int { return cmp.Compare(b.est, a.est) })

	// Run would set it on first use: set here, before the hosts call Run at once
	if r.InstanceTimeout == 0 {
		r.InstanceTimeout = 5 * time.Minute
	}
	defer s.wrap(cells)()

	s.wctx, s.cancel = context.WithCancel(ctx)
	defer s.cancel()
	for {
		// every host still up takes a cell at once, then the next
		// whenever it is idle; a round ends when the queue is empty
		up := s.round()
		s.qmu.Lock()
		left := len(s.queue)
		s.qmu.Unlock()
		if s.fatal != nil || s.wctx.Err() != nil || left == 0 || up == 0 {
			break
		}
	}
	return s.result(ctx)
}

// wrap makes r's progress and skip see the plan's labels and the whole
// matrix (cells), and returns what sets them back.
func (s *spreading) wrap(cells []spreadCell) (restore func()) {
	r, plan := s.r, s.plan
	index := map[Cell]int{}
	for i, c := range cells {
		index[Cell{Workload: c.job.Def.Name, Params: c.job.Params.String(), Instances: c.n}] = i
	}
	start := time.Now()
	per := (plan.Warmup + plan.Reps) * len(plan.Targets)
	hostOf, planLabel := map[string]int{}, map[string]string{}
	for w, h := range s.sp.Hosts {
		for i, t := range h.Targets {
			hostOf[t.Label], planLabel[t.Label] = w, plan.Targets[i].Label
		}
	}
	progress, skip := r.Progress, r.Skip
	if progress != nil {
		r.Progress = func(p Progress) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if w, ok := hostOf[p.Target]; ok && p.Note == "" {
				s.cur[w] = p.Done
			}
			p.CellIndex, p.Cells = index[p.Cell], len(cells)
			p.Done, p.Total = s.doneCells*per, len(cells)*per
			for _, d := range s.cur {
				p.Done += d
			}
			p.Elapsed = time.Since(start)
			progress(p)
		}
	}
	if skip != nil {
		r.Skip = func(target string, cell Cell, rep int) bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return skip(planLabel[target], cell, rep)
		}
	}
	return func() { r.Progress, r.Skip = progress, skip }
}

// next takes the first cell of the queue; false when it is empty.
func (s *spreading) next() (spreadCell, bool) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if len(s.queue) == 0 {
		return spreadCell{}, false
	}
	c := s.queue[0]
	s.queue = s.queue[1:]
	return c, true
}

// round gives every host still up a cell at once, each taking the next
// whenever it is idle, until the queue is empty or the run ends; up is
// how many hosts took part.
func (s *spreading) round() (up int) {
	var wg sync.WaitGroup
	for w, h := range s.sp.Hosts {
		if s.lost[w] != nil {
			continue
		}
		c, ok := s.next()
		if !ok {
			break
		}
		up++
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.host(w, h, c)
		}()
	}
	wg.Wait()
	return up
}

// host runs cell c, then the next ones of the queue, on host w (h) until
// the queue is empty, the host is lost or the run ends.
func (s *spreading) host(w int, h *SpreadHost, c spreadCell) {
	for ok := true; ok; c, ok = s.next() {
		if err := s.sp.hostLost(h); err != nil {
			// lost between cells: the cell goes back untouched
			s.qmu.Lock()
			s.queue = append([]spreadCell{c}, s.queue...)
			s.qmu.Unlock()
			s.lost[w] = err
			s.mu.Lock()
			fmt.Fprintf(s.sp.Log, "host %s lost: %v; the other hosts take the cells left\n", h.Name, err)
			s.mu.Unlock()
			return
		}
		if s.wctx.Err() != nil {
			return
		}
		sub := s.plan
		sub.Targets, sub.Jobs, sub.Instances = h.Targets, []Job{c.job}, []int{c.n}
		err := s.r.Run(s.wctx, sub)
		s.mu.Lock()
		s.doneCells++
		s.cur[w] = 0
		s.mu.Unlock()
		if _, cellsFailed := err.(*CellsFailed); err != nil && !cellsFailed {
			s.fatalOnce.Do(func() {
				s.fatal = err
				s.cancel()
			})
			return
		}
		if err := s.sp.hostLost(h); err != nil {
			s.lost[w] = err
			what := "it had finished that cell"
			if failedOn(s.r.Failures(), h, c) {
				what = "what it had not finished of that cell is recorded as failed (its finished repetitions are kept)"
			}
			s.mu.Lock() // the progress display writes there too
			fmt.Fprintf(s.sp.Log, "host %s lost during %s: %v; %s, and the other hosts take the cells left\n", h.Name, c, err, what)
			s.mu.Unlock()
			return
		}
	}
}

// result is Run's error once the hosts are done.
func (s *spreading) result(ctx context.Context) error {
	if s.fatal != nil {
		return s.fatal
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("spread run: %w", err)
	}
	var errs []error
	if fs := s.r.Failures(); len(fs) > 0 {
		errs = append(errs, &CellsFailed{Failures: fs})
	}
	for w, err := range s.lost {
		if err != nil {
			errs = append(errs, fmt.Errorf("host %s was lost: %w", s.sp.Hosts[w].Name, err))
		}
	}
	if len(s.queue) > 0 {
		var names []string
		for _, c := range s.queue {
			names = append(names, c.String())
		}
		errs = append(errs, fmt.Errorf("%d cell(s) not run, every host being lost: %s (isobench run --resume %d --trust-hosts runs them)", len(s.queue), strings.Join(names, ", "), s.sp.RunID))
	}
	return errors.Join(errs...)
}

// failedOn reports whether cell c failed on one of h's platforms.
func failedOn(fs []Failure, h *SpreadHost, c spreadCell) bool {
	for _, f := range fs {
		for _, t := range h.Targets {
			if f.Target == t.Label && f.Cell.Workload == c.job.Def.Name && f.Cell.Params == c.job.Params.String() && f.Cell.Instances == c.n {
				return true
			}
		}
	}
	return false
}

// hostLost says why any of h's platforms lost its connection; nil when
// all are up.
func (sp *Spread) hostLost(h *SpreadHost) error {
	for _, t := range h.Targets {
		if err := sp.Lost(t.Platform); err != nil {
			return err
		}
	}
	return nil
}
