// Package transfer moves study 002's and 004's data over real protocols
// between the host (standing for the studies' client machines) and servers
// inside instances, and verifies every byte at the receiving end: a
// transfer that loses or corrupts data is a failure, never a number.
//
// Protocols (workloads), each with direction=download|upload where the
// protocol has both:
//
//   - scp: OpenSSH's sshd in the instance with a host key and an
//     authorized client key made for the run (the host pins the host key),
//     scp (SFTP protocol) from the host; transfer_time (s) and throughput
//     (MB/s).
//   - wget: Apache in the instance, wget from the host with the list of
//     the data set's URLs (one connection, keep-alive); download only
//     (HTTP uploads need WebDAV); the tree's empty folders are made before
//     the clock starts since HTTP moves files only.
//   - smb: Samba's smbd in the instance (a share, the password made for the
//     run and given to the agent on its stdin), smbclient mget/mput with
//     recurse from the host.
//
// Every server listens on the instance's own address only (loopback on
// native and network=host), and the run's secrets (the scp host key, the
// smb password) reach the instance on the agent's stdin, never its argv.
//   - ftp: vsftpd in the instance (anonymous, writable only for
//     direction=upload, passive ports published), lftp mirror from the
//     host (one file at a time);
//     also file_latency_mean, the mean time per file. Study 004 drove FTP
//     with JMeter: JMeter samples each request on its own (a login and
//     one RETR/STOR per sampler, many threads, per-sample latency
//     percentiles), while lftp mirrors a tree over one control
//     connection, so per-file latency here is the mean, with no
//     distribution, and there is no think time or ramp-up.
//   - smtp: Postfix in the instance accepting mail for isobench.test into
//     one Maildir. client=go (default): isobench's own SMTP client sends
//     exactly MESSAGES bodies of SIZE over THREADS connections per client
//     (many messages per connection) and the instance checks each one
//     arrived once with its body intact; messages_per_min is the count
//     over the time until the last message was accepted. client=postal:
//     the study's postal runs for DURATION and is stopped with
//     postal.StopSignal; messages/min is postal's mean over its complete
//     minutes (so runs last more than 2 minutes), bodies are postal's
//     random ones and only counts are checked: every message Postfix
//     accepted must be in the Maildir, and at least as many as postal
//     reports sent (postal prints no line for its last, partial minute).
//
// Data sets (internal/dataset): file=SIZE (study 002: 450m, the default)
// or tree=NODES/SIZE (study 002: 2500/75m, files and folders together,
// text and binary files of log-uniform sizes), seeded (seed=) and
// generated for each repetition on the sending side, untimed: in the
// instance by the agent for downloads, in a host temporary directory for
// uploads. The receiving side checks names, sizes and SHA-256 of every
// file against the data set's manifest and refuses extra files.
//
// Layouts (study 002, tables 4-10), options of every workload:
// exclusive (one client, one instance), neighbours=N (N more instances of
// the platform beside the measured one: idle, or with neighbours-busy=true
// running the same server with a client of their own moving the same data
// again and again while the measured clients run), clients=N (N
// concurrent clients against one instance) and, through --instances,
// instances x clients (one set of clients per instance). Every sample
// carries layout=exclusive|neighbours-idle|neighbours-busy|clients|pairs,
// the counts, protocol, direction, data, server and client, so reports
// can draw time per protocol x layout x platform.
//
// inject=truncate|server is for tests: one received file is truncated
// before verification, or one byte of the server's copy is changed; the
// repetition must fail.
package transfer

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/dataset"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/par"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/service"
)

// Protocols (the workloads' names) and directions.
const (
	SCP  = "scp"
	Wget = "wget"
	SMB  = "smb"
	FTP  = "ftp"

	Download = "download"
	Upload   = "upload"
)

// Defs are the transfer workloads and their hidden in-guest half.
func Defs() []workload.Def { return []workload.Def{SCPDef, WgetDef, SMBDef, FTPDef, SMTPDef, Server} }

func params(directions ...string) []workload.Param {
	dirHelp := "download: instance -> client; upload: client -> instance"
	if len(directions) == 1 && directions[0] == Download {
		dirHelp = "instance -> client"
	}
	return []workload.Param{
		{Name: "direction", Kind: workload.Enum, Enum: directions, Default: Download, Help: dirHelp},
		{Name: "file", Kind: workload.Size, Default: "", Computed: "450m when tree is not given", Min: 1, Max: dataset.MaxSize, Help: "one file of this size (study 002: 450m)"},
		{Name: "tree", Kind: workload.String, Default: "", Help: "NODES/SIZE: a tree of NODES files and folders holding SIZE bytes (study 002: 2500/75m)"},
		{Name: "seed", Kind: workload.Int, Default: "1", Min: 0, Max: 1 << 62, Help: "seed of the data set's contents and sizes"},
		{Name: "clients", Kind: workload.Int, Default: "1", Min: 1, Max: 64, Help: "concurrent clients against each instance (study 002: 2 clients, 1 environment)"},
		{Name: "neighbours", Kind: workload.Int, Default: "0", Min: 0, Max: 64, Help: "more instances of the platform beside the measured ones (study 002: a second environment active)"},
		{Name: "neighbours-busy", Kind: workload.Bool, Default: "false", Help: "neighbours run the same server with a client of their own moving the same data all the time; false: idle"},
		{Name: "link", Kind: workload.String, Default: "", Help: "clients in a network namespace of their own on isobench's bridge, behind a link of this rate both ways (tc tbf; e.g. 100mbit, study 002's 100 Mb Ethernet; every client shares it); empty: clients on the host"},
		{Name: "inject", Kind: workload.Enum, Enum: []string{InjectNone, InjectTruncate, InjectServer}, Default: InjectNone, Help: "testing: truncate one received file before verification, or one file on the server; the run must fail"},
	}
}

// hostTools is a transfer workload's Needs.HostTools: its client, which
// runs on the host, and on native its server.
func hostTools(client, server workload.Tool) func(workload.Params, bool) []workload.Tool {
	return func(_ workload.Params, native bool) []workload.Tool {
		if native {
			return []workload.Tool{client, server}
		}
		return []workload.Tool{client}
	}
}

// def is a transfer workload whose client on the host moves the data to
// or from its server in the instance.
func def(name, help string, client, server workload.Tool, directions ...string) workload.Def {
	return workload.Def{
		Name:  name,
		Help:  help,
		Needs: workload.Needs{Network: true, Servers: true, HostTools: hostTools(client, server)},
		Estimate: func(p workload.Params) time.Duration {
			// ~80 MB/s per client pair on 2 cores, a few ms per node of a
			// tree, verification, and a second for the server and each
			// neighbour to come up
			bytes, nodes := sizeOf(p)
			clients := float64(max(1, p.Int("clients")))
			move := clients * bytes / 80e6
			if rate, _ := linkRate(p); rate > 0 {
				move = max(move, clients*bytes*8/float64(rate)) // the clients share the link
			}
			return workload.Seconds(1 + float64(p.Int("neighbours")) + move + clients*nodes*3e-3 + bytes/500e6)
		},
		Params: params(directions...),
		Derive: func(p workload.Params) map[string]string {
			if p.Str("tree") == "" {
				return map[string]string{"file": "450m"}
			}
			return nil
		},
		Check: func(p workload.Params) error {
			if p.Str("file") != "" && p.Str("tree") != "" {
				return errors.New("give file or tree, not both")
			}
			if _, err := linkRate(p); err != nil {
				return err
			}
			_, err := dataSpec(p)
			return err
		},
		Host: func(ctx context.Context, p workload.Params, env workload.HostEnv) ([]workload.InstanceResult, error) {
			return hostRun(ctx, name, p, env)
		},
		Timeout: func(p workload.Params) time.Duration {
			ds, _ := dataSpec(p)
			// 5 MB/s per client at the least, plus setup
			b := ds.Size * int64(p.Int("clients"))
			slowest := int64(5 << 20)
			if rate, _ := linkRate(p); rate > 0 {
				slowest = min(slowest, max(int64(rate/8/2), 1)) // half the link's rate
			}
			return 10*time.Minute + time.Duration(b/slowest)*time.Second + time.Duration(ds.Nodes/5)*time.Second
		},
	}
}

// linkRate is parameter link's rate in bits per second, 0 when the
// clients run on the host (link empty).
func linkRate(p workload.Params) (uint64, error) {
	if p.Str("link") == "" {
		return 0, nil
	}
	return hostnet.ParseRate(p.Str("link"))
}

// The workloads.
var (
	SCPDef = def(SCP, "scp (SFTP protocol) of a file or a tree to or from OpenSSH in the instance (study 002, tables 4-7): transfer time and MB/s, every byte verified; runs in the debian image (native: the host's sshd)",
		workload.Need("scp", "openssh-client"), workload.Need("sshd", "openssh-server"), Download, Upload)
	WgetDef = def(Wget, "wget of a file or a tree from Apache in the instance (study 002, tables 8-10): transfer time and MB/s, every byte verified; download only; runs in the debian image (native: the host's apache2)",
		workload.Need("wget", "wget"), workload.Need("apache2", "apache2"), Download)
	SMBDef = def(SMB, "smbclient get/put of a file or a tree from/to Samba in the instance (study 002, tables 8-10, NetBIOS): transfer time and MB/s, every byte verified; runs in the debian image (native: the host's samba)",
		workload.Need("smbclient", "smbclient"), workload.Need("smbd", "samba"), Download, Upload)
	FTPDef = ftpDef(def(FTP, "lftp mirror of a file or a tree from/to vsftpd in the instance (study 004, figures 8-10), or client=jmeter: the study's JMeter FTP sampler downloading every file; transfer time, MB/s and mean time per file, every byte verified; runs in the debian image (native: the host's vsftpd)",
		workload.Need("lftp", "lftp"), workload.Need("vsftpd", "vsftpd"), Download, Upload))
)

// FTP clients.
const (
	ClientLftp   = "lftp"
	ClientJMeter = "jmeter"
)

// ftpDef adds the client choice to the ftp workload: lftp, or study 004's
// JMeter (download only: its FTP sampler makes no folders on the server).
func ftpDef(d workload.Def) workload.Def {
	d.Params = append(d.Params, workload.Param{Name: "client", Kind: workload.Enum, Enum: []string{ClientLftp, ClientJMeter}, Default: ClientLftp,
		Help: "lftp: one mirror of the data set; jmeter: JMeter 2.13's FTP sampler (study 004's client), one request per file, its own total time, rate and latency"})
	tools := d.Needs.HostTools
	d.Needs.HostTools = func(p workload.Params, native bool) []workload.Tool {
		need := tools(p, native)
		if p.Str("client") == ClientJMeter {
			need[0] = workload.Need("jmeter", "jmeter") // instead of lftp
		}
		return need
	}
	check := d.Check
	d.Check = func(p workload.Params) error {
		if p.Str("client") == ClientJMeter && p.Str("direction") == Upload {
			return errors.New("client=jmeter downloads only: JMeter's FTP sampler makes no folders on the server")
		}
		return check(p)
	}
	return d
}

func dataSpec(p workload.Params) (dataset.Spec, error) {
	seed := uint64(p.Int("seed"))
	if t := p.Str("tree"); t != "" {
		return dataset.Parse("tree/"+t, seed)
	}
	f := p.Str("file")
	if f == "" {
		f = "450m"
	}
	return dataset.Parse("file/"+f, seed)
}

// Layout names.
func layout(instances, clients, neighbours int, busy bool) string {
	switch {
	case instances > 1:
		return "pairs"
	case clients > 1:
		return "clients"
	case neighbours > 0 && busy:
		return "neighbours-busy"
	case neighbours > 0:
		return "neighbours-idle"
	}
	return "exclusive"
}

// server is one started server instance.
type server struct {
	inst              platform.Instance
	sess              *agenthost.Session
	facts             map[string]string
	hostReady         time.Duration // instance creation to the ready event, less Facts (service.WithInstanceReady)
	host              string        // what the host dials
	port, pasv, pasvN int
	closed            bool
}

// run is one repetition's state.
type run struct {
	proto string
	p     workload.Params
	env   workload.HostEnv
	ds    dataset.Spec
	tmp   string // host temporary directory
	key   string // scp: client private key file
	kh    string // scp: known_hosts
	auth  string // smb: authentication file
	gp    map[string]string
	// sec are the server half's secret parameters (the scp host key, the
	// smb password): on its stdin, never in its argv
	sec map[string]string

	// cnet is where the clients run when link= is given (nil: the host)
	cnet *hostnet.ClientNet
	// insts are every instance the repetition made, servers and idle
	// neighbours, all closed when it ends
	insts *workload.Instances
}

func hostRun(ctx context.Context, proto string, p workload.Params, env workload.HostEnv) ([]workload.InstanceResult, error) {
	ds, err := dataSpec(p)
	if err != nil {
		return nil, err
	}
	if env.Instances < 1 {
		return nil, errors.New("transfer: need at least one instance")
	}
	if err := needClient(proto, p); err != nil {
		return nil, err
	}
	if env.Base.Image, err = service.EnsureImage(ctx, env.Platform, env.Base.Image); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", fmt.Sprintf("isobench-transfer-%d-", os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	defer os.RemoveAll(tmp)
	r := &run{proto: proto, p: p, env: env, ds: ds, tmp: tmp, insts: workload.NewInstances(env, "transfer "+proto)}
	defer r.insts.CloseAll(ctx)
	rate, err := linkRate(p)
	if err != nil {
		return nil, err
	}
	if rate > 0 {
		if r.cnet, err = hostnet.NewClientNet(ctx, hostnet.Default(""), fmt.Sprintf("transfer-clients-%d", os.Getpid()), rate); err != nil {
			return nil, fmt.Errorf("transfer %s: %w", proto, err)
		}
		defer r.cnet.Close(context.WithoutCancel(ctx))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return r.do(ctx)
}

// clientBinary is the host program each protocol's client runs.
func clientBinary(proto string) (bin, pkg string) {
	switch proto {
	case SCP:
		return "scp", "openssh-client"
	case Wget:
		return "wget", "wget"
	case SMB:
		return "smbclient", "smbclient"
	}
	return "lftp", "lftp"
}

func needClient(proto string, p workload.Params) error {
	if proto == SMTP {
		return nil // isobench's own client
	}
	if proto == FTP && p.Str("client") == ClientJMeter {
		return needJMeter()
	}
	bin, pkg := clientBinary(proto)
	if _, err := exec.LookPath(bin); err != nil {
		return fmt.Errorf("transfer %s: the client %s is not installed on the host (apt-get install %s)", proto, bin, pkg)
	}
	return nil
}

// secrets makes the run's key material: an SSH client key and host key
// (the known_hosts pins the host key under an alias, so every server of
// the run shares it) and an SMB password.
func (r *run) secrets(ctx context.Context) error {
	r.gp = map[string]string{"proto": r.proto, "direction": r.p.Str("direction"), "data": r.ds.String(),
		"seed": r.p.Str("seed"), "clients": r.p.Str("clients"), "inject": r.p.Str("inject")}
	if r.proto == SMTP {
		r.gp["direction"], r.gp["seed"] = Upload, "1"
		r.gp["messages"], r.gp["msgsize"] = r.p.Str("messages"), r.p.Str("size")
		if r.p.Str("client") == "postal" {
			r.gp["messages"] = "0" // unknown in advance: the server counts
		}
	}
	switch r.proto {
	case SCP:
		r.key = filepath.Join(r.tmp, "id")
		hk := filepath.Join(r.tmp, "hostkey")
		for _, f := range []string{r.key, hk} {
			if out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "isobench", "-f", f).CombinedOutput(); err != nil {
				return fmt.Errorf("transfer scp: ssh-keygen: %w: %s", err, out)
			}
		}
		pub, err := os.ReadFile(r.key + ".pub")
		if err != nil {
			return fmt.Errorf("transfer: %w", err)
		}
		priv, err := os.ReadFile(hk)
		if err != nil {
			return fmt.Errorf("transfer: %w", err)
		}
		hpub, err := os.ReadFile(hk + ".pub")
		if err != nil {
			return fmt.Errorf("transfer: %w", err)
		}
		r.kh = filepath.Join(r.tmp, "known_hosts")
		if err := os.WriteFile(r.kh, append([]byte(hostAlias+" "), hpub...), 0o600); err != nil {
			return fmt.Errorf("transfer: %w", err)
		}
		r.gp["authkey"] = hex.EncodeToString(pub)
		r.sec = map[string]string{"hostkey": hex.EncodeToString(priv)}
	case SMB:
		sec, err := service.NewPassword()
		if err != nil {
			return err
		}
		r.auth = filepath.Join(r.tmp, "smbauth")
		if err := os.WriteFile(r.auth, []byte("username = root\npassword = "+sec+"\n"), 0o600); err != nil {
			return fmt.Errorf("transfer: %w", err)
		}
		r.sec = map[string]string{"secret": sec}
	}
	return nil
}

const hostAlias = "isobench-transfer"

// start creates an instance and starts the protocol's server in it.
func (r *run) start(ctx context.Context, clients int, inject string, verify bool) (*server, error) {
	s := &server{}
	var err error
	if s.port, err = service.FreePort(); err != nil {
		return nil, err
	}
	ports := []int{s.port}
	if r.proto == FTP {
		// passive data ports: a block free on the host, below the
		// ephemeral range (published at their own numbers with
		// network=nat, where no connection's source port may take one)
		s.pasvN = clients + 4
		if s.pasv, err = hostnet.FreeBlock("127.0.0.1", s.pasvN); err != nil {
			return nil, fmt.Errorf("transfer ftp: passive ports: %w", err)
		}
		for i := 0; i < s.pasvN; i++ {
			ports = append(ports, s.pasv+i)
		}
	}
	sp := r.env.Base
	sp.Name = r.env.NewName()
	sp.Ports = ports
	// published ports (network=nat): FTP's replies name its passive
	// ports, so they are published at their own numbers (free here)
	sp.SamePorts = r.proto == FTP
	created := time.Now()
	in, err := r.env.Platform.Create(ctx, sp)
	if err != nil {
		return nil, fmt.Errorf("transfer %s: create instance: %w", r.proto, err)
	}
	r.insts.Add(in)
	s.inst = in
	addr, err := in.Address(ctx)
	if err != nil {
		return nil, fmt.Errorf("transfer %s: instance address: %w", r.proto, err)
	}
	if addr == "" {
		return nil, fmt.Errorf("transfer %s: the instance has no address (network=none?); transfers need bridge or host", r.proto)
	}
	ip := net.ParseIP(addr)
	if ip == nil || !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()) {
		return nil, fmt.Errorf("transfer: refusing to connect to %q: only loopback and the instances' private addresses are used", addr)
	}
	// the server listens on the instance's own address only: its address
	// on the isobench network, loopback where the instance shares the
	// host's network (native, network=host), never every interface
	bind := r.reach(addr)
	dial, err := platform.Endpoint(ctx, in, s.port)
	if err != nil {
		return nil, fmt.Errorf("transfer %s: %w", r.proto, err)
	}
	h, ps, err := net.SplitHostPort(dial)
	if err != nil {
		return nil, fmt.Errorf("transfer %s: endpoint %q: %w", r.proto, dial, err)
	}
	s.host = r.reach(h)
	if hp, _ := strconv.Atoi(ps); hp != s.port {
		if r.proto == FTP {
			return nil, fmt.Errorf("transfer ftp: %s published port %d as %d: FTP's passive replies name the server's own port numbers, so they must be published at the same ones", sp.Name, s.port, hp)
		}
		s.port = hp // published port
	}
	gp := map[string]string{}
	for k, v := range r.gp {
		gp[k] = v
	}
	gp["bind"], gp["clients"], gp["inject"] = bind, strconv.Itoa(clients), inject
	gp["verify"] = strconv.FormatBool(verify)
	gp["port"] = strconv.Itoa(ports[0])
	if r.proto == FTP {
		gp["pasv"], gp["pasv-n"] = strconv.Itoa(s.pasv), strconv.Itoa(s.pasvN)
		if h != addr {
			gp["pasv-address"] = h // published: the passive replies name the host's address
		}
	}
	t := time.Now()
	s.facts = in.Facts(ctx) // the platform's bookkeeping (an engine's inspect): untimed
	created = created.Add(time.Since(t))
	if d := service.ReadyTimeout(s.facts, defaultReadyTimeout); d != defaultReadyTimeout {
		gp["ready-timeout"] = service.DurationParam(d)
	}
	s.sess = agenthost.StartWith(ctx, in, ServerName, spec.Canonical(gp), agenthost.Options{Secrets: r.sec})
	for _, step := range []func() error{
		func() error {
			err := s.sess.WaitReady(ctx)
			s.hostReady = time.Since(created)
			return err
		},
		s.sess.Release,
		func() error { return s.sess.WaitStarted(ctx) },
	} {
		if err := step(); err != nil {
			s.sess.Abort()
			s.closed = true
			return nil, fmt.Errorf("transfer %s: %w", r.proto, err)
		}
	}
	return s, nil
}

// finish stops the server and returns its metrics, or why it failed
// (an upload that did not verify).
func (s *server) finish(ctx context.Context) ([]sample.Metric, error) {
	if s.closed {
		return nil, nil
	}
	s.closed = true
	s.sess.Abort()
	ms, _, err := s.sess.Result(ctx)
	if err != nil {
		return nil, err
	}
	return service.WithInstanceReady(ms, s.hostReady), nil
}

// clientOut is one measured client's transfer: how long it took, why it
// failed, where it received and what its tool reported.
type clientOut struct {
	dur time.Duration
	err error
	dir string
	cr  clientResult
}

// do runs one repetition: it starts a server in every instance and
// neighbour, runs the clients at once (busy neighbours moving the data
// meanwhile), checks what arrived and returns each client's metrics.
func (r *run) do(ctx context.Context) ([]workload.InstanceResult, error) {
	if err := r.secrets(ctx); err != nil {
		return nil, err
	}
	n, c, nb := r.env.Instances, r.p.Int("clients"), r.p.Int("neighbours")
	busy := r.p.Bool("neighbours-busy")
	upload := r.p.Str("direction") == Upload
	mail := r.proto == SMTP
	inject := r.p.Str("inject")

	// the data to send lives on the host for uploads (generated untimed)
	src := filepath.Join(r.tmp, "src", "data")
	if upload {
		if err := r.ds.Generate(src); err != nil {
			return nil, err
		}
	}
	servers, err := r.startServers(ctx, n, nb, c, busy, inject)
	defer func() {
		for _, s := range servers {
			if s != nil && !s.closed {
				s.sess.Abort()
				s.closed = true
			}
		}
	}()
	if err != nil {
		return nil, err
	}

	stopBusy, bwg := r.busyNeighbours(ctx, servers, n, nb, busy, src)
	outs, err := r.runClients(ctx, servers, n, c)
	if err != nil {
		stopBusy()
		return nil, err
	}
	stopBusy()
	bwg.Wait()

	var errs []error
	for k, o := range outs {
		if o.err != nil {
			errs = append(errs, fmt.Errorf("client %d of instance %d: %w", k%c, k/c, o.err))
		}
	}
	// downloads are verified here, uploads by each server when it stops
	if !upload && !mail {
		verrs, err := r.verifyDownloads(outs, c, inject)
		if err != nil {
			return nil, err
		}
		errs = append(errs, verrs...)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	ready := make([][]sample.Metric, n)
	for i, s := range servers {
		if s == nil {
			continue
		}
		ms, err := s.finish(fctx)
		if err != nil && i < n {
			errs = append(errs, fmt.Errorf("instance %d: %w", i, err))
		}
		if i < n {
			ready[i] = ms
		}
	}
	if mail && r.p.Str("client") == "postal" && len(errs) == 0 {
		errs = append(errs, postalDelivered(outs, ready, n, c)...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("transfer %s: %w", r.proto, err)
	}
	return r.results(outs, ready, servers[0].facts["network"]), nil
}

// startServers starts a server in each of the n measured instances (with
// c clients and inject) and in each of the nb neighbours (one client,
// nothing injected), or creates the neighbours idle when they are not
// busy. servers has the ones started even when err is not nil.
func (r *run) startServers(ctx context.Context, n, nb, c int, busy bool, inject string) (servers []*server, err error) {
	servers = make([]*server, n+nb)
	err = par.Each(n+nb, func(i int) error {
		cl, inj := c, inject
		if i >= n {
			cl, inj = 1, InjectNone
			if !busy {
				// an idle neighbour: an instance with nothing running
				sp := r.env.Base
				sp.Name = r.env.NewName()
				in, err := r.env.Platform.Create(ctx, sp)
				if err != nil {
					return fmt.Errorf("transfer %s: create neighbour: %w", r.proto, err)
				}
				r.insts.Add(in)
				return nil
			}
		}
		s, err := r.start(ctx, cl, inj, i < n)
		servers[i] = s
		return err
	})
	return servers, err
}

// busyNeighbours starts, when busy, a client of their own for each of the
// neighbours (servers n to n+nb-1), moving the data again and again until
// stop is called; wg is done once they have stopped.
func (r *run) busyNeighbours(ctx context.Context, servers []*server, n, nb int, busy bool, src string) (stop context.CancelFunc, wg *sync.WaitGroup) {
	bctx, stop := context.WithCancel(ctx)
	wg = &sync.WaitGroup{}
	for i := n; i < n+nb && busy; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for k := 0; bctx.Err() == nil; k++ {
				dir := filepath.Join(r.tmp, fmt.Sprintf("busy%d-%d", i, k))
				r.client(bctx, servers[i], 0, src, dir)
				os.RemoveAll(dir)
			}
		}(i)
	}
	return stop, wg
}

// runClients prepares c clients for each of the n measured servers, then
// starts them all at once and waits for them; outs[i*c+j] is client j of
// instance i.
func (r *run) runClients(ctx context.Context, servers []*server, n, c int) ([]clientOut, error) {
	outs := make([]clientOut, n*c)
	gate := make(chan struct{})
	// aborted, set before the gate opens, sends the clients already
	// prepared home when a later one cannot be: none of them may wait at
	// the gate for ever
	aborted := false
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		for j := 0; j < c; j++ {
			k := i*c + j
			dir := filepath.Join(r.tmp, fmt.Sprintf("recv%d-%d", i, j))
			outs[k].dir = dir
			prep, err := r.prepareClient(servers[i], j, dir, &outs[k].cr)
			if err != nil {
				aborted = true
				close(gate)
				wg.Wait()
				return nil, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				if aborted {
					return
				}
				t0 := time.Now()
				err := prep(ctx)
				outs[k].dur, outs[k].err = time.Since(t0), err
			}()
		}
	}
	close(gate)
	wg.Wait()
	return outs, nil
}

// verifyDownloads checks what each client that succeeded received against
// the data set (damaging the first client's first file first with
// inject=truncate) and removes it; errs says which clients' data differ,
// err why the damage could not be done.
func (r *run) verifyDownloads(outs []clientOut, c int, inject string) (errs []error, err error) {
	for k, o := range outs {
		if o.err != nil {
			continue
		}
		got := filepath.Join(o.dir, "data")
		if k == 0 && inject == InjectTruncate {
			if err := damage(filepath.Join(got, r.ds.Files()[0].Path)); err != nil {
				return nil, err
			}
		}
		if _, err := r.ds.Verify(got); err != nil {
			errs = append(errs, fmt.Errorf("client %d of instance %d: %w", k%c, k/c, err))
		}
		os.RemoveAll(o.dir)
	}
	return errs, nil
}

// postalDelivered checks, for each instance, that its server delivered at
// least as many messages as its postal clients reported sent: postal's
// bodies are random, so the count is what can be checked.
func postalDelivered(outs []clientOut, ready [][]sample.Metric, n, c int) []error {
	var errs []error
	for i := 0; i < n; i++ {
		var sent int64
		for j := 0; j < c; j++ {
			sent += outs[i*c+j].cr.sent
		}
		delivered := -1.0
		for _, m := range ready[i] {
			if m.Name == "delivered" {
				delivered = m.Value
			}
		}
		// postal does not report its last, partial minute
		if delivered < float64(sent) {
			errs = append(errs, fmt.Errorf("instance %d: postal reported %d messages sent, %v were delivered", i, sent, delivered))
		}
	}
	return errs
}

// dataTag is the data tag of the results: the data set, or for mail the
// messages sent and their size.
func (r *run) dataTag() string {
	data := r.ds.String()
	if r.proto == SMTP {
		data = "mail/" + r.p.Str("messages") + "/" + strconv.FormatInt(r.p.Size("size"), 10)
		if r.p.Str("client") == "postal" {
			data = "postal/" + r.p.Str("duration") + "/" + strconv.FormatInt(r.p.Size("size"), 10)
			if n := r.p.Int("postal-messages"); n > 0 {
				data = "postal/" + strconv.Itoa(n) + "/" + strconv.FormatInt(r.p.Size("size"), 10)
			}
		}
	}
	return data
}

// results are the clients' metrics and tags, one result per client, the
// first client of each instance with its server's metrics (ready).
func (r *run) results(outs []clientOut, ready [][]sample.Metric, network string) []workload.InstanceResult {
	n, c, nb := r.env.Instances, r.p.Int("clients"), r.p.Int("neighbours")
	busy := r.p.Bool("neighbours-busy")
	mail := r.proto == SMTP
	if network == "" {
		network = "unknown"
	}
	files := float64(len(r.ds.Files()))
	data := r.dataTag()
	res := make([]workload.InstanceResult, 0, n*c)
	for k, o := range outs {
		ms := r.metrics(o.dur, files)
		switch {
		case o.cr.ms != nil && mail:
			// postal's count leaves out its last, partial minute
			ms = append(o.cr.ms, sample.Metric{Name: "messages_reported", Value: float64(o.cr.sent), Unit: "count", Better: sample.Higher, Agg: sample.Sum})
		case o.cr.ms != nil:
			// JMeter's own times and rate (its JVM's start left out)
			ms = append(o.cr.ms,
				sample.Metric{Name: "files", Value: files, Unit: "count", Better: sample.Higher, Agg: sample.None},
				sample.Metric{Name: "bytes", Value: float64(r.ds.Size), Unit: "B", Better: sample.Higher, Agg: sample.None})
		}
		if k%c == 0 {
			ms = append(ms, ready[k/c]...)
		}
		tags := map[string]string{
			"protocol": r.proto, "direction": r.p.Str("direction"), "data": data,
			"layout":    layout(n, c, r.p.Int("neighbours"), busy),
			"instances": strconv.Itoa(n), "clients": strconv.Itoa(c), "neighbours": strconv.Itoa(nb),
			"server": strconv.Itoa(k / c), "client": strconv.Itoa(k % c),
			"network": network, "client_on": "host",
		}
		if mail {
			tags["direction"] = Upload
			tags["tool"] = r.p.Str("client")
		}
		if r.proto == FTP {
			tags["tool"] = r.p.Str("client")
		}
		if nb > 0 {
			tags["neighbours_busy"] = strconv.FormatBool(busy)
		}
		if r.cnet != nil {
			tags["client_on"] = "netns " + r.cnet.Addr.String() + " behind " + r.p.Str("link")
		}
		res = append(res, workload.InstanceResult{Instance: k, Metrics: ms, Tags: tags})
	}
	return res
}

// metrics of one client's transfer that took d.
func (r *run) metrics(d time.Duration, files float64) []sample.Metric {
	secs := d.Seconds()
	if r.proto == SMTP {
		msgs := float64(r.p.Int("messages"))
		return []sample.Metric{
			{Name: "transfer_time", Value: secs, Unit: "s", Better: sample.Lower, Agg: sample.Max},
			{Name: "messages_per_min", Value: msgs * 60 / secs, Unit: "messages/min", Better: sample.Higher, Agg: sample.Sum},
			{Name: "throughput", Value: msgs * float64(r.p.Size("size")) / 1e6 / secs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum},
			{Name: "messages", Value: msgs, Unit: "count", Better: sample.Higher, Agg: sample.None},
		}
	}
	ms := []sample.Metric{
		{Name: "transfer_time", Value: secs, Unit: "s", Better: sample.Lower, Agg: sample.Max},
		{Name: "throughput", Value: float64(r.ds.Size) / 1e6 / secs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "files", Value: files, Unit: "count", Better: sample.Higher, Agg: sample.None},
		{Name: "bytes", Value: float64(r.ds.Size), Unit: "B", Better: sample.Higher, Agg: sample.None},
	}
	if r.proto == FTP {
		ms = append(ms, sample.Metric{Name: "file_latency_mean", Value: secs * 1000 / files, Unit: "ms", Better: sample.Lower, Agg: sample.Mean})
	}
	return ms
}

// clientResult is what a client measured itself (postal's report).
type clientResult struct {
	ms   []sample.Metric
	sent int64
}

// client runs one transfer against s (busy neighbours), ignoring errors.
func (r *run) client(ctx context.Context, s *server, j int, src, dir string) {
	f, err := r.prepareClient(s, j, dir, nil)
	if err == nil {
		f(ctx)
	}
}

// prepareClient does the untimed part of a client's transfer and returns
// the timed part: the client program moving the data set (dir/data on the
// host for downloads; client j's folder on the server for uploads).
func (r *run) prepareClient(s *server, j int, dir string, cr *clientResult) (func(context.Context) error, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	upload := r.p.Str("direction") == Upload
	src := filepath.Join(r.tmp, "src")
	remoteUp := "up/c" + strconv.Itoa(j)
	port := strconv.Itoa(s.port)
	var argv []string
	switch r.proto {
	case SMTP:
		addr := net.JoinHostPort(s.host, port)
		if r.p.Str("client") == "postal" {
			return func(ctx context.Context) error {
				ms, sent, err := runPostal(ctx, dir, addr, r.p.Int("threads"), r.p.Size("size"), r.p.Duration("duration"), r.p.Int("postal-messages"))
				if cr != nil {
					cr.ms, cr.sent = ms, sent
				}
				return err
			}, nil
		}
		return func(ctx context.Context) error {
			return sendMail(ctx, addr, j, r.p.Int("messages"), r.p.Int("threads"), r.p.Size("size"))
		}, nil
	case SCP:
		argv = []string{"scp", "-s", "-q", "-r", "-B", "-P", port, "-i", r.key,
			"-o", "UserKnownHostsFile=" + r.kh, "-o", "StrictHostKeyChecking=yes", "-o", "HostKeyAlias=" + hostAlias,
			"-o", "BatchMode=yes", "-o", "ConnectTimeout=30"}
		target := "root@" + bracket(s.host)
		if upload {
			argv = append(argv, filepath.Join(src, "data"), target+":"+remoteUp+"/")
		} else {
			argv = append(argv, target+":data", dir+"/")
		}
	case Wget:
		// HTTP moves files, not folders: the empty ones are made first
		var urls strings.Builder
		for _, e := range r.ds.Dirs() {
			if err := os.MkdirAll(filepath.Join(dir, "data", filepath.FromSlash(e.Path)), 0o755); err != nil {
				return nil, fmt.Errorf("transfer: %w", err)
			}
		}
		for _, e := range r.ds.Files() {
			fmt.Fprintf(&urls, "http://%s/data/%s\n", net.JoinHostPort(s.host, port), e.Path)
		}
		list := filepath.Join(r.tmp, fmt.Sprintf("urls-%s-%d-%d", s.host, s.port, j))
		if err := os.WriteFile(list, []byte(urls.String()), 0o644); err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
		argv = []string{"wget", "-q", "-x", "-nH", "--tries=1", "--timeout=60", "-P", dir, "-i", list}
	case SMB:
		cmd := "prompt OFF; recurse ON; lcd " + dir + "; mget data"
		if upload {
			cmd = "prompt OFF; recurse ON; lcd " + src + "; cd " + remoteUp + "; mput data"
		}
		argv = []string{"smbclient", "//" + s.host + "/data", "-p", port, "-A", r.auth, "-m", "SMB3", "-E", "-c", cmd}
	case FTP:
		if r.p.Str("client") == ClientJMeter {
			return r.jmeterClient(s, dir, cr)
		}
		cmd := "set net:max-retries 2; set net:timeout 60; set ftp:passive-mode on; set ftp:prefer-epsv no; mirror --no-perms data " + filepath.Join(dir, "data") + "; quit"
		if upload {
			cmd = "set net:max-retries 2; set net:timeout 60; set ftp:passive-mode on; set ftp:prefer-epsv no; mirror -R --no-perms " + filepath.Join(src, "data") + " " + remoteUp + "/data; quit"
		}
		argv = []string{"lftp", "-u", "anonymous,isobench", "-p", port, "-e", cmd, s.host}
	}
	return func(ctx context.Context) error {
		var out bytes.Buffer
		cmd := r.command(ctx, argv...)
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Stdin = nil
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w: %s", argv[0], err, lastLines(out.String(), 4))
		}
		if r.proto == SMB && strings.Contains(out.String(), "NT_STATUS_") {
			// smbclient can exit 0 after a failed file
			return fmt.Errorf("smbclient: %s", lastLines(out.String(), 4))
		}
		return nil
	}, nil
}

// reach is where the clients reach host address a: a itself, or, for
// clients in a namespace of their own (link=), the bridge's gateway
// address in place of loopback (the host's network, native's servers).
func (r *run) reach(a string) string {
	if ip := net.ParseIP(a); r.cnet != nil && ip != nil && ip.IsLoopback() {
		return r.cnet.Gateway().String()
	}
	return a
}

// command is a client's argv, run where the clients run: on the host, or
// in their own network namespace (link=).
func (r *run) command(ctx context.Context, argv ...string) *exec.Cmd {
	if r.cnet != nil {
		return r.cnet.Command(ctx, argv...)
	}
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

func bracket(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// sizeOf is what a transfer moves, for its estimate: bytes and the number
// of files (a tree's nodes).
func sizeOf(p workload.Params) (bytes, nodes float64) {
	if t := p.Str("tree"); t != "" {
		n, size, _ := strings.Cut(t, "/")
		nn, _ := strconv.Atoi(n)
		sz, _ := spec.ParseSize(size)
		return float64(sz), float64(nn)
	}
	if f := p.Size("file"); f > 0 {
		return float64(f), 1
	}
	return 1 << 20, 1
}
