package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/postal"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/service"
)

// SMTP is the mail workload's name.
const SMTP = "smtp"

// Mail addresses: the instance's Postfix accepts mail for Domain and
// delivers everything to one Maildir.
const (
	Domain    = "isobench.test"
	Recipient = "inbox@" + Domain
	sender    = "isobench@client.test"
)

// smtpHostTools is smtp's Needs.HostTools: postal when it is the client
// (isobench's own client needs nothing), Postfix on native.
func smtpHostTools(p workload.Params, native bool) []workload.Tool {
	var need []workload.Tool
	if p.Str("client") == "postal" {
		need = append(need, workload.Need("postal", "postal"))
	}
	if native {
		need = append(need, workload.Need("postfix", "postfix"))
	}
	return need
}

// SMTPDef sends messages to Postfix in the instance from a Go SMTP client
// on the host and checks every one arrived intact.
var SMTPDef = workload.Def{
	Needs: workload.Needs{Network: true, Servers: true, HostTools: smtpHostTools},
	Name:  SMTP,
	Estimate: func(p workload.Params) time.Duration {
		if p.Str("client") == "postal" && p.Int("postal-messages") > 0 {
			// as isobench's client sends: ~40 MB/s into the Maildir
			return workload.Seconds(3 + float64(p.Int("postal-messages"))*(float64(p.Size("size"))/40e6+0.02))
		}
		if p.Str("client") == "postal" {
			return p.Duration("duration") + 3*time.Second
		}
		// Postfix delivering into the Maildir at ~40 MB/s, ~20 ms a mail
		n := float64(p.Int("messages") * max(1, p.Int("clients")))
		return workload.Seconds(3 + float64(p.Int("neighbours")) + n*(float64(p.Size("size"))/40e6+0.02))
	},
	Help: "Postfix in the instance accepting mail for " + Domain + " (study 004, figure 11: postal, 500 messages of 25 MB from 10 threads): isobench's own SMTP client sends MESSAGES of SIZE from THREADS connections per client; messages/min and MB/s, and every message must arrive in the Maildir intact; runs in the debian image (native: the host's postfix)",
	Params: []workload.Param{
		{Name: "client", Kind: workload.Enum, Enum: []string{"go", "postal"}, Default: "go", Help: "go: isobench's SMTP client sends exactly MESSAGES and every one is checked; postal: the study's postal runs for DURATION (messages/min over its complete minutes; the count delivered must equal the count postal sent)"},
		{Name: "duration", Kind: workload.Duration, Default: "2m30s", Min: 130, Max: 86400, Help: "client=postal: how long postal runs (it needs more than 2 minutes for one complete minute)"},
		{Name: "postal-messages", Kind: workload.Int, Default: "0", Min: 0, Max: 1_000_000, Help: "client=postal: stop postal once it has sent this many messages (study 004: 500), counted in its postal.log; messages/min over the time they took; 0: run for duration"},
		{Name: "messages", Kind: workload.Int, Default: "500", Min: 1, Max: 1_000_000, Help: "messages each client sends"},
		{Name: "size", Kind: workload.Size, Default: "25m", Min: 1, Max: 1 << 30, Help: "body bytes of each message"},
		{Name: "threads", Kind: workload.Int, Default: "10", Min: 1, Max: 1000, Help: "SMTP connections per client sending at once"},
		{Name: "clients", Kind: workload.Int, Default: "1", Min: 1, Max: 64, Help: "concurrent clients against each instance"},
		{Name: "neighbours", Kind: workload.Int, Default: "0", Min: 0, Max: 64, Help: "more instances of the platform beside the measured ones"},
		{Name: "neighbours-busy", Kind: workload.Bool, Default: "false", Help: "neighbours run Postfix with a client of their own sending all the time; false: idle"},
		{Name: "inject", Kind: workload.Enum, Enum: []string{InjectNone, InjectTruncate}, Default: InjectNone, Help: "testing: truncate one delivered message before verification; the run must fail"},
	},
	Check: func(p workload.Params) error {
		if p.Str("client") == "postal" && p.Str("inject") != InjectNone && p.Str("inject") != InjectTruncate {
			return errors.New("client=postal takes inject=truncate only")
		}
		if p.Str("client") == "go" && p.Int("threads") > p.Int("messages") {
			return fmt.Errorf("threads (%d) > messages (%d)", p.Int("threads"), p.Int("messages"))
		}
		return nil
	},
	Host: func(ctx context.Context, p workload.Params, env workload.HostEnv) ([]workload.InstanceResult, error) {
		return hostRun(ctx, SMTP, p, env)
	},
	Timeout: func(p workload.Params) time.Duration {
		b := p.Size("size") * int64(p.Int("messages")) * int64(p.Int("clients"))
		if p.Str("client") == "postal" && p.Int("postal-messages") > 0 {
			return 10*time.Minute + time.Duration(int64(p.Int("postal-messages"))*p.Size("size")/(2<<20))*time.Second
		}
		if p.Str("client") == "postal" {
			return 15*time.Minute + p.Duration("duration")
		}
		return 10*time.Minute + time.Duration(b/(2<<20))*time.Second + time.Duration(p.Int("messages")/10)*time.Second
	},
}

// mailBody is a message body of size bytes on the wire: lines of letters
// ending in CRLF (no line starts with a dot).
func mailBody(size int64) []byte {
	line := []byte("isobench mail body abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123\r\n")
	b := bytes.Repeat(line, int(size)/len(line)+1)[:size]
	if size >= 2 {
		b[size-2], b[size-1] = '\r', '\n'
	}
	return b
}

// sendMail is one client: threads connections sending messages in all,
// each message with X-Isobench-Id: client-k.
func sendMail(ctx context.Context, addr string, client, messages, threads int, size int64) error {
	body := mailBody(size)
	var wg sync.WaitGroup
	errs := make([]error, threads)
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				errs[t] = err
				return
			}
			stop := context.AfterFunc(ctx, func() { conn.Close() })
			defer stop()
			host, _, _ := net.SplitHostPort(addr)
			c, err := smtp.NewClient(conn, host)
			if err != nil {
				conn.Close()
				errs[t] = err
				return
			}
			defer c.Close()
			if err := c.Hello("client.test"); err != nil {
				errs[t] = err
				return
			}
			for k := t; k < messages; k += threads {
				if err := sendOne(c, client, k, body); err != nil {
					errs[t] = fmt.Errorf("message %d-%d: %w", client, k, err)
					return
				}
			}
			errs[t] = c.Quit()
		}(t)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	return ctx.Err()
}

func sendOne(c *smtp.Client, client, k int, body []byte) error {
	if err := c.Mail(sender); err != nil {
		return err
	}
	if err := c.Rcpt(Recipient); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "From: %s\r\nTo: %s\r\nSubject: isobench %d-%d\r\nX-Isobench-Id: %d-%d\r\n\r\n", sender, Recipient, client, k, client, k)
	if _, err := w.Write(body); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// waitQueueEmpty waits until Postfix's queue holds no message (twice in a
// row, 200 ms apart); deferred mail is a failure.
func waitQueueEmpty(ctx context.Context, pr *service.Proc, queue string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	empty := 0
	for {
		n := 0
		for _, d := range []string{"maildrop", "incoming", "active", "deferred", "hold"} {
			filepath.WalkDir(filepath.Join(queue, d), func(_ string, e os.DirEntry, err error) error {
				if err == nil && !e.IsDir() {
					n++
				}
				return nil
			})
		}
		if n == 0 {
			if empty++; empty >= 2 {
				return nil
			}
		} else {
			empty = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d messages still queued after %v", n, timeout)
		}
		select {
		case <-pr.Done:
			return fmt.Errorf("postfix died with %d messages queued (%v)", n, pr.Err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// runPostal runs postal (the study's SMTP load generator) against addr
// for d with threads connections and bodies of size, stops it with
// postal.StopSignal and returns its per-minute rates and the messages it
// sent in all.
func runPostal(ctx context.Context, tmp, addr string, threads int, size int64, d time.Duration, messages int) ([]sample.Metric, int64, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, 0, err
	}
	pn, _ := strconv.Atoi(port)
	users := filepath.Join(tmp, "postal-users")
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "user%d@%s\n", i, Domain) // all delivered to the one Maildir
	}
	if err := os.WriteFile(users, []byte(b.String()), 0o644); err != nil {
		return nil, 0, fmt.Errorf("transfer: %w", err)
	}
	kb := int(max(1, size>>10))
	args, err := postal.Options{Server: host, Port: pn, UserList: users, SenderList: users, Threads: threads, MaxMessageKB: kb, MinMessageKB: kb}.Args()
	if err != nil {
		return nil, 0, err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, postal.Binary, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = tmp // postal writes postal.log (every message) where it runs
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("postal: %w (apt-get install %s)", err, postal.Package)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if messages > 0 {
		return postalMessages(ctx, cmd, done, &out, tmp, messages, size)
	}
	select {
	case err := <-done:
		return nil, 0, fmt.Errorf("postal exited by itself (%v): %s", err, lastLines(out.String(), 4))
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		return nil, 0, ctx.Err()
	case <-time.After(d):
	}
	cmd.Process.Signal(postal.StopSignal)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	res, err := postal.Parse(strings.NewReader(out.String()))
	if err != nil {
		return nil, 0, err
	}
	msgs, _, errs, _ := res.Totals()
	if errs > 0 {
		return nil, 0, fmt.Errorf("postal: %d errors: %s", errs, lastLines(out.String(), 4))
	}
	return res.Metrics(), msgs, nil
}

// acceptedCount counts the messages Postfix accepted and finished with:
// qmgr's "removed" lines, one per message once its last delivery is done
// (after waitQueueEmpty, every accepted message). cleanup's message-id
// lines are not the count: cleanup logs them while DATA still arrives, so
// a client stopped mid-message (postal told to stop after a count, its
// other threads still sending) leaves one for a message Postfix discards.
// Nor are distinct queue IDs: short queue IDs are reused over thousands of
// messages.
func acceptedCount(log string) int {
	b, _ := os.ReadFile(log)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "postfix/qmgr[") && strings.HasSuffix(strings.TrimSpace(l), ": removed") {
			n++
		}
	}
	return n
}

// maildirCount counts the delivered messages.
func maildirCount(box string) int {
	n := 0
	for _, d := range []string{"new", "cur"} {
		es, _ := os.ReadDir(filepath.Join(box, d))
		n += len(es)
	}
	return n
}

// waitDelivered waits until want messages are in box (Postfix delivers
// after accepting), the server dies, or timeout passes.
func waitDelivered(ctx context.Context, pr *service.Proc, box string, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n := maildirCount(box)
		if n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d messages delivered within %v", n, want, timeout)
		}
		select {
		case <-pr.Done:
			return fmt.Errorf("postfix died with %d of %d messages delivered (%v)", n, want, pr.Err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// verifyMaildir checks box holds exactly the messages client-k for every
// client and k, each with the body sent.
func verifyMaildir(box string, clients, messages int, size int64) error {
	want := sha256.Sum256(bytes.ReplaceAll(mailBody(size), []byte("\r\n"), []byte("\n")))
	seen := map[string]bool{}
	var problems []string
	for _, d := range []string{"new", "cur"} {
		es, _ := os.ReadDir(filepath.Join(box, d))
		for _, e := range es {
			b, err := os.ReadFile(filepath.Join(box, d, e.Name()))
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			hdr, body, ok := bytes.Cut(b, []byte("\n\n"))
			id := ""
			for _, l := range strings.Split(string(hdr), "\n") {
				if v, ok := strings.CutPrefix(l, "X-Isobench-Id: "); ok {
					id = strings.TrimSpace(v)
				}
			}
			switch {
			case !ok || id == "":
				problems = append(problems, e.Name()+": not an isobench message")
			case seen[id]:
				problems = append(problems, id+": delivered twice")
			case sha256.Sum256(body) != want:
				problems = append(problems, fmt.Sprintf("%s: body of %d bytes differs from the %d sent", id, len(body), size))
			}
			seen[id] = true
		}
	}
	for c := 0; c < clients; c++ {
		for k := 0; k < messages; k++ {
			if id := strconv.Itoa(c) + "-" + strconv.Itoa(k); !seen[id] {
				problems = append(problems, id+": missing")
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		n := len(problems)
		if n > 5 {
			problems = append(problems[:5], fmt.Sprintf("and %d more", n-5))
		}
		return fmt.Errorf("mail: %d of %d messages not delivered intact: %s", n, clients*messages, strings.Join(problems, "; "))
	}
	return nil
}

// postfixConf writes Postfix's main.cf and master.cf into g.dir/conf and
// returns the command running it in the foreground.
func (g guest) postfix() ([]string, error) {
	conf := filepath.Join(g.dir, "conf")
	mail := filepath.Join(g.dir, "mail")
	for _, d := range []string{conf, filepath.Join(g.dir, "queue"), filepath.Join(g.dir, "data"), mail} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
	}
	uid, gid := userIDs("postfix")
	if uid < 0 {
		return nil, errors.New("transfer smtp: there is no postfix user (apt-get install postfix)")
	}
	os.Chown(filepath.Join(g.dir, "data"), uid, gid)
	// virtual(8) delivers as nobody
	os.Chown(mail, 65534, 65534)
	iface := g.bind // one address, checked (serve)
	main := fmt.Sprintf(`compatibility_level = 3.6
queue_directory = %[1]s/queue
data_directory = %[1]s/data
mail_owner = postfix
setgid_group = postdrop
myhostname = mail.%[2]s
mydomain = %[2]s
mydestination =
inet_interfaces = %[3]s
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = reject_unauth_destination
virtual_mailbox_domains = %[2]s
virtual_mailbox_base = %[4]s
virtual_mailbox_maps = static:inbox/
virtual_uid_maps = static:65534
virtual_gid_maps = static:65534
virtual_minimum_uid = 1
message_size_limit = 0
virtual_mailbox_limit = 0
mailbox_size_limit = 0
alias_maps =
alias_database =
local_recipient_maps =
biff = no
smtputf8_enable = no
smtpd_peername_lookup = no
maillog_file_prefixes = %[1]s
maillog_file = %[5]s
smtpd_client_connection_count_limit = 0
smtpd_client_connection_rate_limit = 0
smtpd_client_message_rate_limit = 0
default_process_limit = 200
`, g.dir, Domain, iface, mail, g.log())
	master := fmt.Sprintf(`%s inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
local     unix  -       n       n       -       -       local
virtual   unix  -       n       n       -       -       virtual
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
`, net.JoinHostPort(g.bind, strconv.Itoa(g.port)))
	if err := os.WriteFile(filepath.Join(conf, "main.cf"), []byte(main), 0o644); err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	if err := os.WriteFile(filepath.Join(conf, "master.cf"), []byte(master), 0o644); err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	// postfix check makes the queue's folders with their owners; the
	// master then runs in the foreground as the agent's child (not
	// through postfix-script, whose master leaves for a session of its
	// own that nobody would stop)
	bin, err := lookSbin("postfix")
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-c", conf, "check")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("transfer smtp: postfix check: %w: %s; %s", err, strings.TrimSpace(out.String()), g.logTail())
	}
	daemon, err := postfixMaster(bin)
	if err != nil {
		return nil, err
	}
	return []string{daemon, "-c", conf, "-d"}, nil
}

// postfixMaster finds Postfix's master daemon (daemon_directory).
func postfixMaster(postfix string) (string, error) {
	out, err := exec.Command(filepath.Join(filepath.Dir(postfix), "postconf"), "-dh", "daemon_directory").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		dir = "/usr/lib/postfix/sbin"
	}
	m := filepath.Join(dir, "master")
	if _, err := os.Stat(m); err != nil {
		return "", fmt.Errorf("transfer smtp: postfix's master is not in %s: %w", dir, err)
	}
	return m, nil
}

func userIDs(name string) (int, int) {
	b, _ := os.ReadFile("/etc/passwd")
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) > 3 && f[0] == name {
			u, _ := strconv.Atoi(f[2])
			g, _ := strconv.Atoi(f[3])
			return u, g
		}
	}
	return -1, -1
}

// postalMessages is a postal run stopped once it has sent messages
// messages (study 004: "up to 500 messages"): its postal.log is read as it
// grows, postal is stopped at the count, and the rate is the count over
// the time it took. postal's first complaint (it cannot connect, the
// server refuses a message) is the run's failure. It returns the metrics
// and the messages postal logged in all (at least messages: some may have
// completed while it stopped).
func postalMessages(ctx context.Context, cmd *exec.Cmd, done chan error, out *bytes.Buffer, tmp string, messages int, size int64) ([]sample.Metric, int64, error) {
	start := time.Now()
	logFile := filepath.Join(tmp, postal.LogFile)
	count := func() (int, error) {
		f, err := os.Open(logFile)
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("postal: %w", err)
		}
		defer f.Close()
		return postal.CountLog(f)
	}
	stop := func() {
		cmd.Process.Signal(postal.StopSignal)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	// postal tells nothing as it sends: its log is polled
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return nil, 0, fmt.Errorf("postal exited by itself (%v): %s", err, lastLines(out.String(), 4))
		case <-ctx.Done():
			cmd.Process.Kill()
			<-done
			return nil, 0, ctx.Err()
		case <-tick.C:
		}
		n, err := count()
		if err != nil {
			stop()
			return nil, 0, err
		}
		if n < messages {
			continue
		}
		took := time.Since(start)
		stop() // out is complete only once postal has exited
		if c := postal.Complaint(out.String()); c != "" {
			return nil, 0, fmt.Errorf("postal: %s", c)
		}
		sent, err := count()
		if err != nil {
			return nil, 0, err
		}
		secs := took.Seconds()
		return []sample.Metric{
			{Name: "transfer_time", Value: secs, Unit: "s", Better: sample.Lower, Agg: sample.Max},
			{Name: "messages_per_min", Value: float64(messages) * 60 / secs, Unit: "messages/min", Better: sample.Higher, Agg: sample.Sum},
			{Name: "throughput", Value: float64(messages) * float64(size) / 1e6 / secs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum},
			{Name: "messages", Value: float64(messages), Unit: "count", Better: sample.Higher, Agg: sample.None},
		}, int64(sent), nil
	}
}
