package study

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/builtin"
)

// pin is what a paper states for one experiment, as its ledger must keep
// saying: the kinds of the six items (S same, H this host forbids, C a
// choice; tool params platforms layout statistic reps), and words of the
// paper's tool, parameters, platforms and layout that its ledger's paper
// side must contain.
type pin struct {
	kinds                           string
	tool, params, platforms, layout []string
}

// studyPins are the papers' setups (the seeds), per study: the items every
// experiment shares, and each experiment's own.
var studyPins = map[string]struct {
	platforms, layout []string
	exps              map[string]pin
}{
	"000": {
		platforms: []string{"Docker", "Ubuntu 19.10", "FreeBSD 12.1", "jails"},
		layout:    []string{"1, 2, 4, 8, 16 and 32 containers"},
		exps: map[string]pin{
			"fig3": {kinds: "CSHSSS", tool: []string{"sysbench cpu"}, params: []string{"10000", "10 s", "8 threads"}},
			"fig4": {kinds: "CSHSSS", tool: []string{"sysbench memory"}, params: []string{"1 KiB", "10 s", "8 threads"}},
			"fig5": {kinds: "CSHSSS", tool: []string{"IO-nugget", "Python"}, params: []string{"128 MB", "1 MiB", "fsync"}},
			"fig6": {kinds: "CSHSSS", tool: []string{"IO-nugget"}, params: []string{"512-byte", "shuffled"}},
			"fig7": {kinds: "CCHSSS", tool: []string{"iperf2"}, params: []string{"64 KByte"}, layout: []string{"N client containers", "one server container"}},
			"fig8": {kinds: "CCHSSS", tool: []string{"date", "slowest"}, params: []string{"existing containers"}},
		},
	},
	"001": {
		platforms: []string{"Ubuntu 20.04", "Docker", "Ubuntu image"},
		layout:    []string{"run once", "1, 2, 3 and 4 containers"},
		exps: map[string]pin{
			"fig3": {kinds: "CSSSSS", tool: []string{"FileBench 1.4.9.1"}, params: []string{"fileserver", "10000", "20", "128k", "50", "60 s"}},
			"fig4": {kinds: "CSSSSS", tool: []string{"FileBench"}, params: []string{"webserver", "1000", "16k", "100", "60 s"}},
			"fig5": {kinds: "CSSSSS", tool: []string{"FileBench"}, params: []string{"varmail", "1000000", "16k", "16", "60 s"}},
			"fig6": {kinds: "CSSSSS", tool: []string{"FileBench"}, params: []string{"randomfileaccess", "10000", "random", "5", "60 s"}},
		},
	},
	"002": {
		platforms: []string{"Ubuntu 10.04", "Hypervisor 3.50", "FreeBSD 8.2", "jails"},
		layout:    []string{"client machines", "100 Mb Ethernet"},
		exps: map[string]pin{
			"table2":      {kinds: "CCHSSS", tool: []string{"top", "du"}, params: []string{"without and with services"}, layout: []string{"no client"}},
			"table3":      {kinds: "CCHSSS", tool: []string{"top"}, params: []string{"without and with services"}, layout: []string{"no client"}},
			"table4":      {kinds: "CSHHSS", tool: []string{"SSH", "OpenSSH"}, params: []string{"450 MB", "2500 nodes", "75 MB"}},
			"table4-tree": {kinds: "CSHHSS", tool: []string{"SSH"}, params: []string{"2500 nodes"}},
			"table5":      {kinds: "CSHHSS", tool: []string{"SSH"}, params: []string{"450 MB"}},
			"table6":      {kinds: "CSHHSS", tool: []string{"SSH"}, params: []string{"450 MB"}},
			"table7":      {kinds: "CSHHSS", tool: []string{"SSH"}, params: []string{"450 MB"}},
			"table8":      {kinds: "CSHHSS", tool: []string{"wget", "Apache 2.2.2"}, params: []string{"450 MB"}},
			"table8-smb":  {kinds: "CSHHSS", tool: []string{"Samba", "NetBIOS"}, params: []string{"450 MB"}},
			"table9":      {kinds: "CSHHSS", tool: []string{"wget"}, params: []string{"450 MB"}},
			"table9-smb":  {kinds: "CSHHSS", tool: []string{"Samba"}, params: []string{"450 MB"}},
			"table10":     {kinds: "CSHHSS", tool: []string{"wget"}, params: []string{"450 MB"}},
			"table10-smb": {kinds: "CSHHSS", tool: []string{"Samba"}, params: []string{"450 MB"}},
			"table11":     {kinds: "CSHHCS", tool: []string{"SSH"}, params: []string{"450 MB"}},
		},
	},
	"003": {
		platforms: []string{"LXC 1.1.3", "system container", "Docker 1.9.1", "AUFS", "port mapping", "2 vCPU", "8 GB", "Docker-Machine"},
		layout:    []string{"one container at a time"},
		exps: map[string]pin{
			"fig3-astar":      {kinds: "CCHSCC", tool: []string{"SPEC CPU 2006 473.astar"}, params: []string{"reference input"}},
			"fig3-soplex":     {kinds: "CCHSCC", tool: []string{"SPEC CPU 2006 450.soplex"}, params: []string{"reference input"}},
			"table2":          {kinds: "CSHSCC", tool: []string{"STREAM 5.10"}, params: []string{"bigger than the cache", "Copy", "Triad"}},
			"fig4-randread":   {kinds: "CCHSCC", tool: []string{"fio 2.1.3"}, params: []string{"libaio", "O_DIRECT", "iodepth 16", "numjobs 8", "4 KB", "1 GB", "random read"}},
			"fig4-randwrite":  {kinds: "CCHSCC", tool: []string{"fio 2.1.3"}, params: []string{"iodepth 16", "numjobs 8", "random write"}},
			"fig6":            {kinds: "CCHSCC", tool: []string{"netperf", "TCP_RR"}, params: []string{"100-byte"}, layout: []string{"client on the host", "server in the container"}},
			"fig7-get":        {kinds: "CSCCCC", tool: []string{"redis-benchmark", "Redis 3.0.8"}, params: []string{"pipeline 16", "1 to 16", "GET"}, platforms: []string{"ECS", "GKE"}, layout: []string{"not stated"}},
			"fig7-set":        {kinds: "CSCCCC", tool: []string{"redis-benchmark", "Redis 3.0.8"}, params: []string{"pipeline 16", "1 to 16", "SET"}, platforms: []string{"ECS", "GKE"}, layout: []string{"not stated"}},
			"fig8a":           {kinds: "CCCCCC", tool: []string{"SysBench", "MySQL 5.5"}, params: []string{"1000000 records", "1 to 16 threads", "read only"}, platforms: []string{"ECS", "GKE"}, layout: []string{"not stated"}},
			"fig8b":           {kinds: "CCCCCC", tool: []string{"SysBench", "MySQL 5.5"}, params: []string{"1000000 records", "1 to 16 threads", "read and write"}, platforms: []string{"ECS", "GKE"}, layout: []string{"not stated"}},
			"fig9":            {kinds: "CCCHSS", tool: []string{"HiBench", "Hadoop 2.7.2"}, params: []string{"WordCount 10 GB", "TeraSort 10 GB", "PageRank 0.5 GB", "K-means 4 GB"}, layout: []string{"8 computing nodes"}},
			"fig10-wordcount": {kinds: "CCCHSS", tool: []string{"HiBench", "Spark 1.6.0"}, params: []string{"WordCount", "10 GB"}, layout: []string{"8 computing nodes"}},
			"fig10-terasort":  {kinds: "CCCHSS", tool: []string{"HiBench", "Spark 1.6.0"}, params: []string{"TeraSort", "10 GB"}, layout: []string{"8 computing nodes"}},
			"fig10-pagerank":  {kinds: "CCCHSS", tool: []string{"HiBench", "Spark 1.6.0"}, params: []string{"PageRank", "0.5 GB"}, layout: []string{"8 computing nodes"}},
			"fig10-kmeans":    {kinds: "CCCHSS", tool: []string{"HiBench", "Spark 1.6.0"}, params: []string{"K-means", "4 GB"}, layout: []string{"8 computing nodes"}},
		},
	},
	"004": {
		platforms: []string{"native Ubuntu 16.04", "Docker", "LXC", "LXD", "system containers", "published ports"},
		layout:    []string{"client machine", "router"},
		exps: map[string]pin{
			"fig3a":  {kinds: "CSSSSS", tool: []string{"sysbench 0.4.12"}, params: []string{"one thread", "total time"}, layout: []string{"no client"}},
			"fig3b":  {kinds: "CSSSSS", tool: []string{"sysbench 0.4.12"}, params: []string{"2, 4, 6 and 8 threads"}, layout: []string{"no client"}},
			"fig4":   {kinds: "CSSSSS", tool: []string{"IOzone", "Phoronix"}, params: []string{"4 GB", "4 KB"}, layout: []string{"no client"}},
			"fig5":   {kinds: "CSSSSS", tool: []string{"RAMspeed", "Phoronix"}, params: []string{"add, copy, scale and triad"}, layout: []string{"no client"}},
			"table2": {kinds: "CSSSSS", tool: []string{"CPU, RAM and IOzone"}, params: []string{"1 - Op", "summed"}, layout: []string{"no client"}},
			"fig6":   {kinds: "SCSHSS", tool: []string{"Apache2", "ab"}, params: []string{"1000 to 8000 users"}},
			"fig7":   {kinds: "SCSHSS", tool: []string{"Apache2", "ab"}, params: []string{"1000 to 8000 users"}},
			"fig8":   {kinds: "CCSHSS", tool: []string{"JMeter", "FTP"}, params: []string{"not given"}},
			"fig9":   {kinds: "CCSHSS", tool: []string{"JMeter"}, params: []string{"not given"}},
			"fig10":  {kinds: "CCSHSS", tool: []string{"JMeter"}, params: []string{"not given"}},
			"fig11":  {kinds: "CSSHSS", tool: []string{"postal"}, params: []string{"500 messages", "25 MB", "10 threads"}},
		},
	},
}

// Each built-in study's ledger says what its paper states (tool,
// parameters, platforms, layout) and keeps its verdicts: an edit that
// changes either must change this table too.
func TestLedgerPinnedToThePapers(t *testing.T) {
	if len(studyPins) != len(IDs()) {
		t.Fatalf("pins for %d studies, %d built in", len(studyPins), len(IDs()))
	}
	letter := map[string]byte{Same: 'S', "host": 'H', "choice": 'C'}
	for _, id := range IDs() {
		f, err := Load(id)
		if err != nil {
			t.Fatal(err)
		}
		sp := studyPins[id]
		if len(sp.exps) != len(f.Study.Experiments) {
			t.Errorf("%s: %d experiments pinned, the file has %d", id, len(sp.exps), len(f.Study.Experiments))
		}
		for _, e := range f.Study.Experiments {
			p, ok := sp.exps[e.ID]
			if !ok {
				t.Errorf("%s %s: not pinned", id, e.ID)
				continue
			}
			l := f.Study.Ledger(e, f.Reps)
			if len(l.Missing) > 0 {
				t.Errorf("%s %s: ledger lacks %v", id, e.ID, l.Missing)
				continue
			}
			var kinds []byte
			for _, en := range l.Entries {
				kinds = append(kinds, letter[en.Kind()])
			}
			if string(kinds) != p.kinds {
				t.Errorf("%s %s: ledger kinds %s, pinned %s (%s)", id, e.ID, kinds, p.kinds, l.Line())
			}
			want := map[string][]string{"tool": p.tool, "params": p.params, "platforms": p.platforms, "layout": p.layout}
			if want["platforms"] == nil {
				want["platforms"] = sp.platforms
			}
			if want["layout"] == nil {
				want["layout"] = sp.layout
			}
			for item, words := range want {
				en, _ := l.Get(item)
				for _, w := range words {
					if !strings.Contains(en.Paper, w) {
						t.Errorf("%s %s: the ledger's %s says the paper had %q, which lacks %q", id, e.ID, item, en.Paper, w)
					}
				}
			}
		}
	}
}

func TestLedgerRules(t *testing.T) {
	same := func(p string) *Item { return &Item{Paper: p, Here: Same} }
	full := func() *Fidelity {
		return &Fidelity{Tool: &Item{Paper: "sysbench", Here: "differs: re-implemented"}, Params: same("10 s"),
			Platforms: &Item{Paper: "jails", Here: "differs: not run", Host: HostNoFreeBSD}, Layout: same("one host"), Statistic: same("median"), Reps: same("10")}
	}
	l := (&Meta{Fidelity: full()}).Ledger(Experiment{ID: "e"}, "")
	if l.Faithful() || !strings.Contains(l.Line(), "tool differs (choice)") || !strings.Contains(l.Line(), "platforms differs (host: no FreeBSD)") {
		t.Errorf("a re-implemented tool: %s", l.Line())
	}
	fd := full()
	fd.Tool = same("sysbench 1.0")
	// Only a platform this host cannot run, named: faithful.
	if l := (&Meta{Fidelity: fd}).Ledger(Experiment{ID: "e"}, ""); !l.Faithful() || !strings.HasSuffix(l.Line(), "→ faithful here") || len(l.Details()) != 1 {
		t.Errorf("only the platforms differ, by the host: %s %v", l.Line(), l.Details())
	}
	fd.Platforms.Host = ""
	if l := (&Meta{Fidelity: fd}).Ledger(Experiment{ID: "e"}, ""); l.Faithful() {
		t.Errorf("platforms differing by choice counted faithful: %s", l.Line())
	}
	fd.Platforms.Host = HostNoFreeBSD
	fd.Layout = &Item{Paper: "two machines", Here: "differs: one", Host: HostNoSecondMachine}
	if l := (&Meta{Fidelity: fd}).Ledger(Experiment{ID: "e"}, ""); l.Faithful() || !l.HostLimited() {
		t.Errorf("a layout this host forbids: faithful %v, host-limited %v", l.Faithful(), l.HostLimited())
	}

	base := func() File {
		return File{Platforms: []string{"native", "docker"}, Workloads: []string{"cpu", "tool:sysbench-cpu"}, Study: &Meta{ID: "x", Title: "t", Fidelity: full(),
			Experiments: []Experiment{{ID: "fig1", Workload: "cpu"}, {ID: "fig2", Workload: "tool:sysbench-cpu", Fidelity: &Fidelity{Tool: same("sysbench")}}}}}
	}
	if err := base().Check(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*File){
		"a re-implementation claims the paper's tool": func(f *File) { f.Study.Experiments[0].Fidelity = &Fidelity{Tool: same("sysbench")} },
		"an experiment not run claims the tool": func(f *File) {
			f.Study.Experiments = append(f.Study.Experiments, Experiment{ID: "fig9", NotRunnable: "no", Fidelity: &Fidelity{Tool: same("hadoop")}})
		},
		"an item missing":           func(f *File) { f.Study.Fidelity.Reps = nil },
		"neither same nor differs":  func(f *File) { f.Study.Fidelity.Params.Here = "close enough" },
		"differs without a reason":  func(f *File) { f.Study.Fidelity.Params.Here = "differs:" },
		"an unknown host limit":     func(f *File) { f.Study.Fidelity.Platforms.Host = "no time" },
		"same with a host limit":    func(f *File) { f.Study.Fidelity.Params.Host = HostNoKVM },
		"nothing of the paper said": func(f *File) { f.Study.Fidelity.Layout.Paper = " " },
	}
	for name, mut := range bad {
		f := base()
		mut(&f)
		if err := f.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Two host limits at once.
	f := base()
	f.Study.Fidelity.Platforms.Host = HostNoFreeBSD + ", " + HostNoKVM
	if err := f.Check(); err != nil {
		t.Errorf("two host limits: %v", err)
	}
}

// At a smaller scale the parameters it shortens and the repetitions it
// changes differ from the paper, by choice; the paper scale keeps the
// file's ledger.
func TestLedgerAtScale(t *testing.T) {
	f, _ := Load("000")
	p, _ := f.AtScale(ScalePaper)
	q, _ := f.AtScale(ScaleQuick)
	for _, e := range q.Study.Experiments {
		lp, lq := p.Study.Ledger(e, p.Reps), q.Study.Ledger(e, q.Reps)
		rp, _ := lp.Get("reps")
		rq, _ := lq.Get("reps")
		if !rp.IsSame() || rq.IsSame() || !strings.Contains(rq.Why(), "3 repetitions here (quick scale)") {
			t.Errorf("%s reps: paper %q, quick %q", e.ID, rp.Here, rq.Here)
		}
		pq, _ := lq.Get("params")
		switch e.ID {
		case "fig3":
			if !strings.Contains(pq.Why(), "quick scale sets duration=1s") {
				t.Errorf("fig3 params at quick scale: %q", pq.Here)
			}
		case "fig8": // startup has no scale parameters: its own difference stays
			if !strings.Contains(pq.Why(), "created and started") {
				t.Errorf("fig8 params at quick scale: %q", pq.Here)
			}
		}
	}
}

func TestPrintFidelityCountsHonestly(t *testing.T) {
	var b bytes.Buffer
	f, _ := Load("004")
	n, m := PrintFidelity(&b, f)
	out := b.String()
	if m != len(f.Study.Experiments) || n != 0 {
		t.Errorf("004: faithful %d of %d", n, m)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[len(lines)-1] != "faithful here: 0 of 11" {
		t.Errorf("last line %q", lines[len(lines)-1])
	}
	for _, e := range f.Study.Experiments {
		if !strings.Contains(out, "\n  "+e.ID+" ") {
			t.Errorf("no row for %s:\n%s", e.ID, out)
		}
	}
	for _, s := range []string{"fig3a tool [choice]: isobench's cpu", "fig6 layout [host: no second machine]"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

// Every figure of the report carries its experiment's ledger line, and the
// plan prints one per experiment with the count.
func TestLedgerInSectionsAndPlan(t *testing.T) {
	for _, id := range IDs() {
		f, cells := synthStudyCells(t, id)
		_, secs := Sections(f, cells, nil)
		for _, s := range secs {
			if !strings.HasPrefix(s.Fidelity, "fidelity: tool ") || !strings.Contains(s.Fidelity, "→") {
				t.Errorf("%s %s: fidelity %q", id, s.ID, s.Fidelity)
			}
		}
		p, err := NewPlan(f, builtin.Workloads(), builtin.Platforms())
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		p.Print(&b)
		out := b.String()
		for _, e := range f.Study.Experiments {
			if !strings.Contains(out, "  "+e.ID+" fidelity: tool ") {
				t.Errorf("%s plan: no ledger line for %s", id, e.ID)
			}
		}
		if !strings.Contains(out, fmt.Sprintf("faithful here: 0 of %d", len(f.Study.Experiments))) {
			t.Errorf("%s plan: no count:\n%s", id, out)
		}
	}
}
