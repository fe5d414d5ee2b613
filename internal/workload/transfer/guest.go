package transfer

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/dataset"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/service"
)

// ServerName is the hidden in-guest half: it prepares the data (download:
// the data set, generated inside the instance; upload: one empty folder
// per client), starts the protocol's server, reports ready once it accepts
// connections, serves until the host closes its input, stops the server
// and, for uploads, verifies what every client sent. A server that never
// answers or dies, and received data that differ from the data set, are
// failures with the server log's last lines.
const ServerName = "_transfer"

// Inject values: damage done on purpose to prove that verification
// catches it (tests).
const (
	InjectNone     = "none"
	InjectTruncate = "truncate" // the receiving side truncates one file before verifying
	InjectServer   = "server"   // download: one byte of the server's copy of one file is changed (same size)
)

var protos = []string{SCP, Wget, SMB, FTP, SMTP}

// Server is the in-guest workload.
var Server = workload.Def{
	Name:     ServerName,
	Internal: true,
	Help:     "internal: serves or receives a data set over scp, http, smb or ftp while the host's clients move it",
	Params: []workload.Param{
		{Name: "proto", Kind: workload.Enum, Enum: protos, Default: SCP, Help: "protocol"},
		{Name: "bind", Kind: workload.ListenIP, Default: "127.0.0.1", Help: "address to listen on: the instance's own address (never every interface)"},
		{Name: "port", Kind: workload.Int, Default: "2222", Min: 1, Max: 65535, Help: "port"},
		{Name: "pasv", Kind: workload.Int, Default: "0", Min: 0, Max: 65535, Help: "ftp: first of pasv-n passive ports"},
		{Name: "pasv-n", Kind: workload.Int, Default: "0", Min: 0, Max: 1000, Help: "ftp: passive ports"},
		{Name: "pasv-address", Kind: workload.String, Default: "", Help: "ftp: the address the passive replies name (the host's loopback when the ports are published there); empty: the server's own"},
		{Name: "direction", Kind: workload.Enum, Enum: []string{Download, Upload}, Default: Download, Help: "download: serve the data set; upload: receive it"},
		{Name: "data", Kind: workload.String, Default: "file/1m", Help: "data set (dataset.Parse)"},
		{Name: "seed", Kind: workload.Int, Default: "1", Min: 0, Max: 1 << 62, Help: "data set seed"},
		{Name: "clients", Kind: workload.Int, Default: "1", Min: 1, Max: 1000, Help: "upload: clients whose copies are verified"},
		{Name: "authkey", Kind: workload.String, Default: "", Help: "scp: hex of the client's authorized public key line (one key, no options)"},
		{Name: "hostkey", Kind: workload.String, Default: "", Secret: true, Help: "scp: hex of the server's private host key (OpenSSH format), given on the agent's stdin"},
		{Name: "secret", Kind: workload.String, Default: "", Secret: true, Help: "smb: the password, given on the agent's stdin"},
		{Name: "messages", Kind: workload.Int, Default: "1", Min: 0, Max: 1_000_000, Help: "smtp: messages each client sends"},
		{Name: "msgsize", Kind: workload.Size, Default: "1k", Min: 1, Max: 1 << 30, Help: "smtp: body bytes of each message"},
		{Name: "verify", Kind: workload.Bool, Default: "true", Help: "verify what the clients sent (false for busy neighbours)"},
		{Name: "inject", Kind: workload.Enum, Enum: []string{InjectNone, InjectTruncate, InjectServer}, Default: InjectNone, Help: "testing: damage one file"},
		{Name: "ready-timeout", Kind: workload.Duration, Default: service.DurationParam(defaultReadyTimeout), Min: 0.1, Max: 3600, Help: "how long the server may take to accept connections"},
		{Name: "timeout", Kind: workload.Duration, Default: "2h", Min: 1, Max: 86400, Help: "stop after this long even if the host does not say so"},
	},
	Check: checkServer,
	Agent: service.UntilInputEnds(serve),
}

// reAuthKey is the one authorized_keys line the scp server accepts: a key
// of a plain type, no options (command=, from=, ...), one line.
var reAuthKey = regexp.MustCompile(`^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+={0,2}( [A-Za-z0-9@._-]+)?\n?$`)

// reHostKey is an OpenSSH private key file and nothing else.
var reHostKey = regexp.MustCompile(`^-----BEGIN OPENSSH PRIVATE KEY-----\n([A-Za-z0-9+/=]+\n)+-----END OPENSSH PRIVATE KEY-----\n?$`)

// checkServer validates what reaches the servers' configuration files and
// key files beyond each parameter's kind (bind is a ListenIP): the scp
// keys, the smb password, the passive port range. Secrets are never
// quoted.
func checkServer(p workload.Params) error {
	if ak := p.Str("authkey"); ak != "" {
		b, err := hex.DecodeString(ak)
		if err != nil || !reAuthKey.Match(b) {
			return errors.New("authkey: want the hex of one public key line without options")
		}
	}
	if hk := p.Str("hostkey"); hk != "" {
		b, err := hex.DecodeString(hk)
		if err != nil || !reHostKey.Match(b) {
			return errors.New("hostkey: want the hex of an OpenSSH private key file")
		}
	}
	if sec := p.Str("secret"); sec != "" && !service.ValidPassword(sec) {
		return errors.New("secret: not a password isobench makes (hex digits)")
	}
	if p.Int("pasv")+p.Int("pasv-n") > 65536 {
		return fmt.Errorf("pasv %d and pasv-n %d go beyond port 65535", p.Int("pasv"), p.Int("pasv-n"))
	}
	// it goes into vsftpd's configuration: an IPv4 address and nothing else
	if a := p.Str("pasv-address"); a != "" {
		if ip, err := netip.ParseAddr(a); err != nil || !ip.Is4() || ip.String() != a {
			return fmt.Errorf("pasv-address %q: want an IPv4 address", a)
		}
	}
	return nil
}

// defaultReadyTimeout bounds a server's start (the host raises it under
// emulation: service.ReadyTimeout).
const defaultReadyTimeout = 60 * time.Second

// guest is one server's setup inside its instance.
type guest struct {
	proto, dir, bind string
	port             int
	p                workload.Params
}

func (g guest) data() string { return filepath.Join(g.dir, "www", "data") }
func (g guest) up() string   { return filepath.Join(g.dir, "www", "up") }
func (g guest) log() string  { return filepath.Join(g.dir, "server.log") }

func serve(ctx context.Context, p workload.Params, ready workload.Barrier, stop <-chan struct{}) ([]sample.Metric, error) {
	// the data set's generation is untimed setup (service.Setup)
	setupBegan := time.Now()
	scratch, err := workload.Scratch()
	if err != nil {
		return nil, err
	}
	g := guest{proto: p.Str("proto"), dir: filepath.Join(scratch, "transfer-"+p.Str("proto")), bind: p.Str("bind"), port: p.Int("port"), p: p}
	// the directory and the address go into the servers' configurations
	if err := service.CheckConfigPath(g.dir); err != nil {
		return nil, err
	}
	if err := service.CheckListen(g.bind); err != nil {
		return nil, err
	}
	ds, err := dataset.Parse(p.Str("data"), uint64(p.Int("seed")))
	if err != nil {
		return nil, err
	}
	os.RemoveAll(g.dir)
	if err := os.MkdirAll(filepath.Join(g.dir, "www"), 0o755); err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	defer os.RemoveAll(g.dir)
	// servers dropping to another user (Apache's www-data, vsftpd's ftp)
	// must reach the files: let others search the folders above
	for d := g.dir; d != "/" && d != "." && d != os.TempDir(); d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, st.Mode().Perm()|0o001)
		}
	}
	upload := p.Str("direction") == Upload
	if upload && g.proto != SMTP {
		for c := 0; c < p.Int("clients"); c++ {
			d := filepath.Join(g.up(), "c"+strconv.Itoa(c))
			if err := os.MkdirAll(d, 0o777); err != nil {
				return nil, fmt.Errorf("transfer: %w", err)
			}
			os.Chmod(d, 0o777) // vsftpd's anonymous user writes here
			if g.proto == FTP {
				os.Chown(d, ftpUID(), -1)
			}
		}
	} else {
		if err := ds.Generate(g.data()); err != nil {
			return nil, err
		}
		if p.Str("inject") == InjectServer {
			f := ds.Files()[0]
			if err := flip(filepath.Join(g.data(), f.Path)); err != nil {
				return nil, err
			}
		}
	}
	setup := time.Since(setupBegan)
	argv, err := g.prepare(ctx)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	pr, err := startProc(g, argv)
	if err != nil {
		return nil, err
	}
	defer pr.Stop()
	if err := waitListening(ctx, pr, service.ProbeAddr(g.bind, g.port), p.Duration("ready-timeout")); err != nil {
		return nil, fmt.Errorf("transfer %s server: %w; %s", g.proto, err, g.logTail())
	}
	readyMs := float64(time.Since(began).Microseconds()) / 1000
	if err := ready(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.Duration("timeout"))
	defer cancel()
	if !pr.Serve(ctx, stop) {
		return nil, fmt.Errorf("transfer %s server died while serving (%v); %s", g.proto, pr.Err, g.logTail())
	}
	ms := service.StartMetrics(readyMs, setup)
	if g.proto == SMTP {
		n, err := g.checkMail(ctx, pr)
		if err != nil {
			return nil, err
		}
		return append(ms, sample.Metric{Name: "delivered", Value: float64(n), Unit: "count", Better: sample.Higher, Agg: sample.Sum}), nil
	}
	pr.Stop()
	if !upload || !p.Bool("verify") {
		return ms, nil
	}
	for c := 0; c < p.Int("clients"); c++ {
		d := filepath.Join(g.up(), "c"+strconv.Itoa(c), "data")
		if c == 0 && p.Str("inject") == InjectTruncate {
			if err := damage(filepath.Join(d, ds.Files()[0].Path)); err != nil {
				return nil, err
			}
		}
		if _, err := ds.Verify(d); err != nil {
			return nil, fmt.Errorf("transfer %s upload of client %d: %w", g.proto, c, err)
		}
	}
	return ms, nil
}

// checkMail waits until Postfix has delivered every message the clients
// sent, stops it and verifies the Maildir.
//
// messages=0 (postal, which sends until stopped and whose bodies are
// random): it waits until Postfix's queue is empty and returns how many
// messages were delivered, for the host to compare with what postal
// says it sent.
func (g guest) checkMail(ctx context.Context, pr *service.Proc) (int, error) {
	defer pr.Stop()
	if !g.p.Bool("verify") {
		return 0, nil
	}
	clients, messages, size := g.p.Int("clients"), g.p.Int("messages"), g.p.Size("msgsize")
	box := filepath.Join(g.dir, "mail", "inbox")
	if messages == 0 {
		if err := waitQueueEmpty(ctx, pr, filepath.Join(g.dir, "queue"), 10*time.Minute); err != nil {
			return 0, fmt.Errorf("transfer smtp: %w; %s", err, g.logTail())
		}
		// what Postfix accepted (its cleanup log lines) must all be in
		// the Maildir; the log is written by postlogd, a moment late
		accepted := acceptedCount(g.log())
		for end := time.Now().Add(10 * time.Second); accepted != maildirCount(box) && time.Now().Before(end); {
			time.Sleep(100 * time.Millisecond)
			accepted = acceptedCount(g.log())
		}
		pr.Stop()
		if g.p.Str("inject") == InjectTruncate {
			es, _ := os.ReadDir(filepath.Join(box, "new"))
			if len(es) > 0 {
				os.Remove(filepath.Join(box, "new", es[0].Name())) // one message lost
			}
		}
		if n := maildirCount(box); n != accepted {
			return 0, fmt.Errorf("transfer smtp: Postfix accepted %d messages and %d are in the Maildir", accepted, n)
		}
		return accepted, nil
	}
	wait := 2*time.Minute + time.Duration(int64(clients*messages)*size/(5<<20))*time.Second
	if err := waitDelivered(ctx, pr, box, clients*messages, wait); err != nil {
		return 0, fmt.Errorf("transfer smtp: %w; %s", err, g.logTail())
	}
	pr.Stop()
	if g.p.Str("inject") == InjectTruncate {
		es, _ := os.ReadDir(filepath.Join(box, "new"))
		if len(es) == 0 {
			return 0, errors.New("inject: no message in the Maildir's new/")
		}
		if err := damage(filepath.Join(box, "new", es[0].Name())); err != nil {
			return 0, err
		}
	}
	if err := verifyMaildir(box, clients, messages, size); err != nil {
		return 0, fmt.Errorf("transfer smtp: %w", err)
	}
	return maildirCount(box), nil
}

// damage truncates a file by one byte, or empties it.
func damage(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	if err := os.Truncate(path, max(0, st.Size()-1)); err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	return nil
}

// flip changes one byte in the middle of a file, keeping its size: only
// the checksum can tell.
func flip(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return fmt.Errorf("inject: %s is empty (%v)", path, err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()/2); err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b, st.Size()/2); err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	return nil
}

func ftpUID() int { u, _ := userIDs("ftp"); return u }

func (g guest) logTail() string {
	b, err := os.ReadFile(g.log())
	if err != nil {
		return "server log: (none: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return "server log: " + strings.Join(lines, " | ")
}

// prepare writes the server's configuration and returns its command.
func (g guest) prepare(ctx context.Context) ([]string, error) {
	switch g.proto {
	case SCP:
		return g.sshd()
	case Wget:
		// Apache serves dir/www, the root holding data/
		return service.ApacheArgv(g.dir, g.bind, g.port)
	case SMB:
		return g.smbd(ctx)
	case FTP:
		return g.vsftpd()
	case SMTP:
		return g.postfix()
	}
	return nil, fmt.Errorf("transfer: unknown protocol %q", g.proto)
}

// write writes a file of the server's into its directory.
func (g guest) write(name, body string, mode os.FileMode) (string, error) {
	f := filepath.Join(g.dir, name)
	if err := os.WriteFile(f, []byte(body), mode); err != nil {
		return "", fmt.Errorf("transfer: %w", err)
	}
	return f, nil
}

// sshd configures OpenSSH's server for the scp clients' key.
func (g guest) sshd() ([]string, error) {
	ak, err1 := hex.DecodeString(g.p.Str("authkey"))
	hk, err2 := hex.DecodeString(g.p.Str("hostkey"))
	if err1 != nil || err2 != nil || len(ak) == 0 || len(hk) == 0 {
		return nil, fmt.Errorf("transfer scp: authkey and hostkey (hex) are required")
	}
	if _, err := g.write("authorized_keys", string(ak), 0o600); err != nil {
		return nil, err
	}
	hkf, err := g.write("hostkey", string(hk), 0o600)
	if err != nil {
		return nil, err
	}
	os.MkdirAll("/run/sshd", 0o755) // privilege separation directory
	conf := fmt.Sprintf(`Port %d
ListenAddress %s
HostKey %s
PidFile %s/sshd.pid
AuthorizedKeysFile %s/authorized_keys
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 200
MaxSessions 200
Subsystem sftp internal-sftp -d %s
`, g.port, g.bind, hkf, g.dir, g.dir, filepath.Join(g.dir, "www"))
	f, err := g.write("sshd_config", conf, 0o644)
	if err != nil {
		return nil, err
	}
	return []string{"sshd", "-D", "-e", "-f", f}, nil
}

// smbd configures Samba with one share and the clients' password.
func (g guest) smbd(ctx context.Context) ([]string, error) {
	for _, d := range []string{"run", "lock", "state", "cache", "private", "ncalrpc"} {
		os.MkdirAll(filepath.Join(g.dir, d), 0o755)
	}
	iface := "interfaces = " + g.bind + "\n  bind interfaces only = yes\n"
	conf := fmt.Sprintf(`[global]
  smb ports = %[1]d
  %[3]s
  pid directory = %[2]s/run
  lock directory = %[2]s/lock
  state directory = %[2]s/state
  cache directory = %[2]s/cache
  private dir = %[2]s/private
  ncalrpc dir = %[2]s/ncalrpc
  binddns dir = %[2]s/state
  passdb backend = tdbsam:%[2]s/private/passdb.tdb
  log file = %[2]s/server.log
  log level = 1
  server role = standalone server
  disable netbios = yes
  load printers = no
  printing = bsd
  printcap name = /dev/null
  disable spoolss = yes
  server min protocol = SMB2
  map to guest = never
  max log size = 0
[data]
  path = %[2]s/www
  read only = no
  force user = root
  create mask = 0644
  directory mask = 0755
`, g.port, g.dir, iface)
	f, err := g.write("smb.conf", conf, 0o644)
	if err != nil {
		return nil, err
	}
	sec := g.p.Str("secret")
	if sec == "" {
		return nil, fmt.Errorf("transfer smb: secret is required")
	}
	bin, err := lookSbin("smbpasswd")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "-c", f, "-s", "-a", "root")
	cmd.Stdin = strings.NewReader(sec + "\n" + sec + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("transfer smb: smbpasswd: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return []string{"smbd", "--foreground", "--no-process-group", "--debug-stdout", "-s", f}, nil
}

// vsftpd configures an anonymous FTP server on the instance's address.
func (g guest) vsftpd() ([]string, error) {
	empty := filepath.Join(g.dir, "empty")
	os.MkdirAll(empty, 0o755)
	// anonymous (vsftpd's virtual users need PAM files, the host's
	// own on native): listening on the instance's address only, and
	// writable only when the clients upload
	write := "NO"
	if g.p.Str("direction") == Upload {
		write = "YES"
	}
	pasv := ""
	if g.p.Int("pasv-n") > 0 {
		pasv = fmt.Sprintf("pasv_min_port=%d\npasv_max_port=%d\n", g.p.Int("pasv"), g.p.Int("pasv")+g.p.Int("pasv-n")-1)
	}
	if a := g.p.Str("pasv-address"); a != "" {
		// published ports (network=nat): the replies name the host's
		// address, where the same port numbers are published
		pasv += "pasv_address=" + a + "\npasv_addr_resolve=NO\n"
	}
	conf := fmt.Sprintf(`listen=YES
listen_ipv6=NO
listen_address=%[1]s
listen_port=%[2]d
background=NO
anonymous_enable=YES
local_enable=NO
no_anon_password=YES
anon_root=%[3]s
write_enable=%[7]s
anon_upload_enable=%[7]s
anon_mkdir_write_enable=%[7]s
anon_other_write_enable=%[7]s
anon_umask=022
anon_world_readable_only=YES
ftp_username=ftp
secure_chroot_dir=%[4]s
seccomp_sandbox=NO
isolate_network=NO
xferlog_enable=NO
vsftpd_log_file=%[5]s
dual_log_enable=NO
syslog_enable=NO
max_clients=0
max_per_ip=0
pasv_enable=YES
%[6]sconnect_from_port_20=NO
use_localtime=NO
`, g.bind, g.port, filepath.Join(g.dir, "www"), empty, g.log(), pasv, write)
	f, err := g.write("vsftpd.conf", conf, 0o600)
	if err != nil {
		return nil, err
	}
	return []string{"vsftpd", f}, nil
}

func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/sbin"} {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return filepath.Join(d, name), nil
		}
	}
	return "", fmt.Errorf("transfer: %s is not installed here (the debian image has it; natively: apt-get install %s)", name, debPkg(name))
}

func debPkg(bin string) string {
	switch bin {
	case "sshd":
		return "openssh-server"
	case "apache2":
		return "apache2"
	case "smbd", "smbpasswd":
		return "samba"
	case "postfix":
		return "postfix"
	}
	return bin
}

func startProc(g guest, argv []string) (*service.Proc, error) {
	bin, err := lookSbin(argv[0])
	if err != nil {
		return nil, err
	}
	return service.StartProc("transfer", g.proto, bin, argv[1:], g.dir, g.log(), 15*time.Second)
}

// waitListening connects to addr until it accepts, the server exits or
// the timeout passes.
func waitListening(ctx context.Context, pr *service.Proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-pr.Done:
			return fmt.Errorf("the server exited before it listened (%v)", pr.Err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s within %v (%v)", addr, timeout, err)
		}
	}
}
