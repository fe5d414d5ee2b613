// Package service runs real server software (nginx, Apache, Redis,
// MariaDB) inside instances and drives it with the real load generators
// (wrk, ab, redis-benchmark, sysbench oltp) from the host or from client
// instances: the http, redis and oltp workloads.
//
// A service's life in one repetition: the host creates the server instance
// (the debian image holds the servers; native uses the host's own), starts
// the hidden agent workload _service in it, which writes the server's
// configuration into the scratch directory, starts the server, waits until
// it answers (a TCP connect and a protocol probe: an HTTP GET of the
// served file, a Redis PING, the MariaDB greeting) and reports ready. The
// host then runs the clients, and finally closes the session: the agent
// stops the server and reports ready_ms, the time from starting the server
// to its first good answer; the host adds instance_ready_ms, from creating
// the instance to learning the service answers (ready.go). A server that
// never answers, dies while serving or serves errors makes the repetition
// fail with the last lines of its log, never a number.
package service

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// Hidden in-guest workloads.
const (
	ServerName = "_service"
	LogName    = "_service-log"
)

// Kinds of server.
const (
	Nginx   = "nginx"
	Apache  = "apache"
	Redis   = "redis"
	MariaDB = "mariadb"
)

// The database and user the oltp clients use; the user's password is
// made for each repetition (NewPassword) and given to the server half on
// its stdin, to sysbench in a configuration on its stdin.
const (
	dbName = "sbtest"
	dbUser = "sbtest"
)

// Server is the in-guest half: it starts one server, waits until it
// answers, reports ready, serves until the host closes its input, stops
// the server and reports ready_ms.
var Server = workload.Def{
	Name:     ServerName,
	Internal: true,
	Help:     "internal: starts a service (nginx, apache, redis, mariadb) and keeps it running while the host's clients run",
	Params: []workload.Param{
		{Name: "kind", Kind: workload.Enum, Enum: []string{Nginx, Apache, Redis, MariaDB}, Default: Nginx, Help: "which server"},
		{Name: "bind", Kind: workload.ListenIP, Default: "127.0.0.1", Help: "address to listen on: the instance's own address (never every interface)"},
		{Name: "port", Kind: workload.Int, Default: "8080", Min: 1, Max: 65535, Help: "port to listen on"},
		{Name: "password", Kind: workload.String, Secret: true, Help: "redis: its requirepass; mariadb: the oltp user's password; made for each repetition (NewPassword), given on the agent's stdin"},
		{Name: "size", Kind: workload.Size, Default: "4k", Min: 0, Max: 1 << 30, Help: "http: bytes of the static file served"},
		{Name: "max-conns", Kind: workload.Int, Default: "0", Min: 0, Max: 1 << 20, Help: "connections the server accepts at once (nginx worker_connections, redis maxclients, mariadb max_connections); 0: enough for the clients"},
		{Name: "ready-timeout", Kind: workload.Duration, Default: DurationParam(defaultReadyTimeout), Min: 0.1, Max: 3600, Help: "how long the server may take to answer"},
		{Name: "timeout", Kind: workload.Duration, Default: "2h", Min: 1, Max: 86400, Help: "stop serving after this long even if the host does not say so"},
	},
	Check: func(p workload.Params) error {
		pw := p.Str("password")
		if pw == "" && (p.Str("kind") == Redis || p.Str("kind") == MariaDB) {
			return fmt.Errorf("kind=%s needs a password", p.Str("kind"))
		}
		if pw != "" && !ValidPassword(pw) {
			return errors.New("the password is not one NewPassword makes (hex digits)")
		}
		return nil
	},
	Agent: UntilInputEnds(serve),
}

// UntilInputEnds is the agent function of a server that serve runs: after
// "go" the host sends nothing more, so once serve's ready barrier is
// passed the end of the agent's input (the clients are done, or the host
// is gone) closes stop.
func UntilInputEnds(serve func(ctx context.Context, p workload.Params, ready workload.Barrier, stop <-chan struct{}) ([]sample.Metric, error)) workload.AgentFunc {
	return func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
		stop := make(chan struct{})
		return serve(ctx, p, func() error {
			if err := ready(); err != nil {
				return err
			}
			go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
			return nil
		}, stop)
	}
}

// LogTail is the in-guest reader of a server's log: it always fails, with
// the last lines of the log of kind's server as its error, so the host gets
// them through the agent's error event.
var LogTail = workload.Def{
	Name:     LogName,
	Internal: true,
	Help:     "internal: reports the last lines of a service's log",
	Params: []workload.Param{
		{Name: "kind", Kind: workload.Enum, Enum: []string{Nginx, Apache, Redis, MariaDB}, Default: Nginx, Help: "which server"},
	},
	Agent: func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
		dir, err := serviceDir(p.Str("kind"))
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s%s", logMarker, logTail(dir, logLines))
	},
}

// defaultReadyTimeout bounds a server's start (the host raises it under
// emulation: ReadyTimeout).
const defaultReadyTimeout = 120 * time.Second

// logLines is how many of the log's last lines a failure carries.
const logLines = 8

// logMarker starts the error text LogTail returns.
const logMarker = "service log: "

// serviceDir is where a server's files live inside the instance.
func serviceDir(kind string) (string, error) {
	s, err := workload.Scratch()
	if err != nil {
		return "", err
	}
	return filepath.Join(s, "service-"+kind), nil
}

// logFile is the log every server writes (its error log; stdout and
// stderr of the process go there too).
func logFile(dir string) string { return filepath.Join(dir, "server.log") }

// logTail returns the last n lines of the server's log, joined by " | ".
func logTail(dir string, n int) string {
	b, err := os.ReadFile(logFile(dir))
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return "(the log is empty)"
	}
	return strings.Join(lines, " | ")
}

// NewPassword makes a password for one repetition's server: 32 random
// hex digits (nothing a configuration file or a command line could read
// as anything else).
func NewPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("service: making a password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ValidPassword says whether pw is one NewPassword could have made (hex
// digits, 16 to 128 of them).
func ValidPassword(pw string) bool {
	if len(pw) < 16 || len(pw) > 128 {
		return false
	}
	for _, r := range pw {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// CheckConfigPath refuses a path that could not be written into a server's
// configuration as it is: only letters, digits and / . _ - (no spaces,
// quotes, separators or newlines), absolute, without "..".
func CheckConfigPath(path string) error {
	ok := filepath.IsAbs(path) && !strings.Contains(path, "..")
	for _, r := range path {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-", r)) {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("service: the directory %q cannot go into a server's configuration (want an absolute path of letters, digits and / . _ -)", path)
	}
	return nil
}

// CheckListen refuses a listen address that is not one IP literal other
// than the unspecified one: it goes into the servers' configurations.
func CheckListen(bind string) error {
	ip := net.ParseIP(bind)
	if ip == nil || ip.IsUnspecified() || ip.IsMulticast() {
		return fmt.Errorf("service: listen address %q: want one IP address of this machine (not 0.0.0.0 or ::)", bind)
	}
	return nil
}

// config is one server's setup inside its directory.
type config struct {
	kind     string
	dir      string
	bind     string
	port     int
	size     int64
	maxConns int
	password string // redis: requirepass; mariadb: the oltp user's
}

// check validates what goes into the server's configuration files.
func (c config) check() error {
	if err := CheckConfigPath(c.dir); err != nil {
		return err
	}
	if err := CheckListen(c.bind); err != nil {
		return err
	}
	if c.port < 1 || c.port > 65535 {
		return fmt.Errorf("service: port %d out of range", c.port)
	}
	if c.maxConns < 0 || c.size < 0 {
		return errors.New("service: negative size or connection count")
	}
	if (c.kind == Redis || c.kind == MariaDB) && !ValidPassword(c.password) {
		return fmt.Errorf("service %s: no valid password", c.kind)
	}
	return nil
}

// prepare writes the server's files (and initialises MariaDB's data
// directory) and returns the command that runs it in the foreground. It
// adds the time spent writing http's served file, isobench's untimed
// setup, to *setup (MariaDB's initialisation is the service's own start).
func (c config) prepare(ctx context.Context, setup *time.Duration) ([]string, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	// workers running as another user (Apache's www-data) must reach the
	// files: let others search (not list) the directories above them, up
	// to the temporary directory (native scratch directories are 0700)
	for d := c.dir; d != "/" && d != "." && d != os.TempDir(); d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, st.Mode().Perm()|0o001)
		}
	}
	switch c.kind {
	case Nginx, Apache:
		www := filepath.Join(c.dir, "www")
		if err := os.MkdirAll(www, 0o755); err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
		t := time.Now()
		body := bytes.Repeat([]byte("isobench "), int(c.size/9)+1)[:c.size]
		if err := os.WriteFile(filepath.Join(www, "index.html"), body, 0o644); err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
		*setup += time.Since(t)
		if c.kind == Nginx {
			return c.nginx()
		}
		return c.apache()
	case Redis:
		return c.redis()
	case MariaDB:
		return c.mariadb(ctx)
	}
	return nil, fmt.Errorf("service: unknown kind %q", c.kind)
}

// redis writes redis.conf (0600: it holds the password) and returns the
// command running the server on it. The default user needs the password
// (as requirepass) and may not run the dangerous commands (CONFIG SET
// dir, MODULE, DEBUG, SHUTDOWN...): redis-benchmark, which takes the
// password in its argv only, runs none of them.
func (c config) redis() ([]string, error) {
	mc := c.maxConns
	if mc == 0 {
		mc = 10000
	}
	conf := fmt.Sprintf(`port %d
bind %s
protected-mode yes
user default on >%s ~* +@all -@dangerous
save ""
appendonly no
dir %s
pidfile %[4]s/redis.pid
daemonize no
logfile ""
maxclients %d
`, c.port, c.bind, c.password, c.dir, mc)
	f := filepath.Join(c.dir, "redis.conf")
	if err := writePrivate(f, conf); err != nil {
		return nil, err
	}
	return []string{"redis-server", f}, nil
}

// writePrivate writes a file only its owner reads (it holds a password),
// replacing what was there.
func writePrivate(path, body string) error {
	os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("service: %w", err)
	}
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		return fmt.Errorf("service: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	return nil
}

func (c config) nginx() ([]string, error) {
	wc := c.maxConns
	if wc == 0 {
		wc = 20000
	}
	tmp := filepath.Join(c.dir, "tmp")
	os.MkdirAll(tmp, 0o755)
	conf := fmt.Sprintf(`daemon off;
master_process on;
user root;
worker_processes auto;
worker_rlimit_nofile %d;
pid %[2]s/nginx.pid;
error_log %[2]s/server.log warn;
events { worker_connections %[3]d; }
http {
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path %[4]s/body;
  proxy_temp_path %[4]s/proxy;
  fastcgi_temp_path %[4]s/fastcgi;
  uwsgi_temp_path %[4]s/uwsgi;
  scgi_temp_path %[4]s/scgi;
  server {
    listen %[5]s;
    root %[2]s/www;
  }
}
`, 2*wc+64, c.dir, wc, tmp, net.JoinHostPort(c.bind, strconv.Itoa(c.port)))
	f := filepath.Join(c.dir, "nginx.conf")
	if err := os.WriteFile(f, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return []string{"nginx", "-c", f, "-p", c.dir + "/", "-e", logFile(c.dir)}, nil
}

// apacheModules is where Debian keeps Apache's modules.
const apacheModules = "/usr/lib/apache2/modules"

func (c config) apache() ([]string, error) {
	workers := c.maxConns
	if workers == 0 {
		workers = 1024
	}
	threads := 64
	servers := (workers + threads - 1) / threads
	user := ""
	if os.Geteuid() == 0 {
		user = "User www-data\nGroup www-data\n"
	}
	conf := fmt.Sprintf(`ServerName localhost
ServerRoot %[1]s
Listen %[2]s
PidFile %[1]s/apache2.pid
DefaultRuntimeDir %[1]s
Mutex file:%[1]s default
ErrorLog %[1]s/server.log
LogLevel warn
%[3]sLoadModule mpm_event_module %[4]s/mod_mpm_event.so
LoadModule authz_core_module %[4]s/mod_authz_core.so
KeepAlive On
MaxKeepAliveRequests 0
ListenBacklog 4096
ServerLimit %[5]d
StartServers 2
ThreadsPerChild %[6]d
ThreadLimit %[6]d
MaxRequestWorkers %[7]d
DocumentRoot %[1]s/www
<Directory />
  AllowOverride None
</Directory>
<Directory %[1]s/www>
  Require all granted
</Directory>
`, c.dir, net.JoinHostPort(c.bind, strconv.Itoa(c.port)), user, apacheModules, servers, threads, servers*threads)
	f := filepath.Join(c.dir, "apache2.conf")
	if err := os.WriteFile(f, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return []string{"apache2", "-f", f, "-DFOREGROUND"}, nil
}

// ApacheArgv writes an Apache configuration serving dir/www on bind:port
// (its log in dir/server.log) and returns the command that runs it in the
// foreground; the transfer workloads' wget downloads use it.
func ApacheArgv(dir, bind string, port int) ([]string, error) {
	c := config{kind: Apache, dir: dir, bind: bind, port: port}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.apache()
}

func (c config) mariadb(ctx context.Context) ([]string, error) {
	data := filepath.Join(c.dir, "data")
	if _, err := os.Stat(filepath.Join(data, "mysql")); err != nil {
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root",
			"--auth-root-authentication-method=normal", "--skip-test-db")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("service: mariadb-install-db: %w: %s", err, lastLines(out.String(), 10))
		}
	}
	// this repetition's password, also for a user a prepared table
	// (seed.go) brought with an earlier one
	init := fmt.Sprintf("CREATE DATABASE IF NOT EXISTS %[1]s;\nCREATE USER IF NOT EXISTS '%[2]s'@'%%' IDENTIFIED BY '%[3]s';\nALTER USER '%[2]s'@'%%' IDENTIFIED BY '%[3]s';\nGRANT ALL ON %[1]s.* TO '%[2]s'@'%%';\n", dbName, dbUser, c.password)
	initFile := filepath.Join(c.dir, "init.sql")
	if err := writePrivate(initFile, init); err != nil {
		return nil, err
	}
	mc := c.maxConns
	if mc == 0 {
		mc = 2000
	}
	return []string{"mariadbd", "--no-defaults", "--datadir=" + data, "--user=root",
		"--port=" + strconv.Itoa(c.port), "--bind-address=" + c.bind,
		"--socket=" + filepath.Join(c.dir, "mysqld.sock"), "--pid-file=" + filepath.Join(c.dir, "mysqld.pid"),
		"--log-error=" + logFile(c.dir), "--skip-log-bin", "--skip-name-resolve", "--init-file=" + initFile,
		"--max-connections=" + strconv.Itoa(mc), "--innodb-buffer-pool-size=256M"}, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func start(c config, argv []string) (*Proc, error) {
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		for _, d := range []string{"/usr/sbin", "/usr/bin", "/sbin"} {
			if _, serr := os.Stat(filepath.Join(d, argv[0])); serr == nil {
				bin, err = filepath.Join(d, argv[0]), nil
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("service %s: %s is not installed here (the debian image has it; natively: apt-get install %s)", c.kind, argv[0], debianPackage(c.kind))
		}
	}
	return StartProc("service", c.kind, bin, argv[1:], c.dir, logFile(c.dir), 20*time.Second)
}

func debianPackage(kind string) string {
	switch kind {
	case Nginx:
		return "nginx"
	case Apache:
		return "apache2"
	case Redis:
		return "redis-server"
	}
	return "mariadb-server"
}

// serve starts the server, reports ready through ready once it answers,
// serves until stop is closed and stops it.
func serve(ctx context.Context, p workload.Params, ready workload.Barrier, stop <-chan struct{}) ([]sample.Metric, error) {
	kind := p.Str("kind")
	dir, err := serviceDir(kind)
	if err != nil {
		return nil, err
	}
	c := config{kind: kind, dir: dir, bind: p.Str("bind"), port: p.Int("port"), size: p.Size("size"), maxConns: p.Int("max-conns"), password: p.Str("password")}
	var setup time.Duration
	argv, err := c.prepare(ctx, &setup)
	if err != nil {
		return nil, err
	}
	raiseNoFile()
	began := time.Now()
	pr, err := start(c, argv)
	if err != nil {
		return nil, err
	}
	defer pr.Stop()
	probeAddr := ProbeAddr(c.bind, c.port)
	if err := waitReady(ctx, pr, c, probeAddr, p.Duration("ready-timeout")); err != nil {
		pr.Stop()
		return nil, fmt.Errorf("service %s: %w; %s%s", kind, err, logMarker, logTail(dir, logLines))
	}
	readyMs := float64(time.Since(began).Microseconds()) / 1000
	if err := ready(); err != nil {
		return nil, err
	}
	overflowed, haveOverflows := overflowsNow()
	ctx, cancel := context.WithTimeout(ctx, p.Duration("timeout"))
	defer cancel()
	if !pr.Serve(ctx, stop) {
		return nil, fmt.Errorf("service %s died while serving (%v); %s%s", kind, pr.Err, logMarker, logTail(dir, logLines))
	}
	select {
	case <-pr.Done:
		return nil, fmt.Errorf("service %s died while serving (%v); %s%s", kind, pr.Err, logMarker, logTail(dir, logLines))
	default:
	}
	// still answering after the clients are done?
	if err := probe(ctx, c, probeAddr); err != nil {
		pr.Stop()
		return nil, fmt.Errorf("service %s stopped answering while serving (%v); %s%s", kind, err, logMarker, logTail(dir, logLines))
	}
	pr.Stop()
	return append(StartMetrics(readyMs, setup), overflowMetric(overflowed, haveOverflows)...), nil
}

// waitReady probes addr until the server gives a good answer, it exits, or
// the timeout passes.
func waitReady(ctx context.Context, pr *Proc, c config, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		last = probe(ctx, c, addr)
		if last == nil {
			return nil
		}
		if errors.Is(last, errBadAnswer) && (c.kind == Nginx || c.kind == Apache) {
			return last // a web server answering errors will not get better
		}
		select {
		case <-pr.Done:
			return fmt.Errorf("the server exited before it answered (%v)", pr.Err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no good answer within %v (last: %v)", timeout, last)
		}
	}
}

var errBadAnswer = errors.New("bad answer")

// raiseNoFile raises this process's open-file limit to its hard limit and
// sets it explicitly, so the servers and load generators started from it
// inherit it (Go restores the original soft limit for children unless the
// program set one): ab, wrk and the servers need a descriptor per
// connection, thousands at the studies' user counts.
func raiseNoFile() {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err == nil {
		l.Cur = l.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}
