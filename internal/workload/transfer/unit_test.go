package transfer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLayoutNames(t *testing.T) {
	for _, c := range []struct {
		inst, clients, nb int
		busy              bool
		want              string
	}{
		{1, 1, 0, false, "exclusive"},
		{1, 1, 1, false, "neighbours-idle"},
		{1, 1, 2, true, "neighbours-busy"},
		{1, 2, 0, false, "clients"},
		{2, 1, 0, false, "pairs"},
		{2, 2, 1, true, "pairs"},
	} {
		if got := layout(c.inst, c.clients, c.nb, c.busy); got != c.want {
			t.Errorf("layout(%d,%d,%d,%v) = %s, want %s", c.inst, c.clients, c.nb, c.busy, got, c.want)
		}
	}
}

func TestParams(t *testing.T) {
	p, err := SCPDef.Resolve(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if ds, _ := dataSpec(p); ds.String() != "file/471859200" || p.Str("file") != "450m" {
		t.Errorf("default data set %v (file=%q), want study 002's 450m file", ds, p.Str("file"))
	}
	p, err = SCPDef.Resolve(map[string]string{"tree": "2500/75m"})
	if err != nil {
		t.Fatal(err)
	}
	if ds, _ := dataSpec(p); ds.Nodes != 2500 || ds.Size != 75<<20 {
		t.Errorf("tree %+v", ds)
	}
	for _, bad := range []map[string]string{
		{"file": "1m", "tree": "10/1m"},
		{"tree": "10"},
		{"tree": "1/1m"},
		{"direction": "sideways"},
		{"clients": "0"},
	} {
		if _, err := SCPDef.Resolve(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := WgetDef.Resolve(map[string]string{"direction": "upload"}); err == nil {
		t.Error("wget upload accepted")
	}
	if _, err := SMTPDef.Resolve(map[string]string{"messages": "2", "threads": "4"}); err == nil {
		t.Error("more threads than messages accepted")
	}
}

// a Maildir as Postfix's virtual(8) writes it: headers it adds, LF line
// ends, the body as sent.
func writeMail(t *testing.T, box, name, id string, body []byte) {
	t.Helper()
	os.MkdirAll(filepath.Join(box, "new"), 0o755)
	var b bytes.Buffer
	b.WriteString("Return-Path: <isobench@client.test>\nDelivered-To: inbox@isobench.test\nReceived: from client.test\nSubject: x\nX-Isobench-Id: " + id + "\n\n")
	b.Write(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")))
	if err := os.WriteFile(filepath.Join(box, "new", name), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyMaildir(t *testing.T) {
	const size = 1000
	body := mailBody(size)
	if len(body) != size || !bytes.HasSuffix(body, []byte("\r\n")) {
		t.Fatalf("body of %d bytes", len(body))
	}
	good := func() string {
		box := t.TempDir()
		for c := 0; c < 2; c++ {
			for k := 0; k < 3; k++ {
				id := string(rune('0'+c)) + "-" + string(rune('0'+k))
				writeMail(t, box, "m"+id, id, body)
			}
		}
		return box
	}
	if err := verifyMaildir(good(), 2, 3, size); err != nil {
		t.Fatalf("intact Maildir: %v", err)
	}
	if n := maildirCount(good()); n != 6 {
		t.Errorf("count %d", n)
	}
	for name, spoil := range map[string]func(box string){
		"missing":   func(box string) { os.Remove(filepath.Join(box, "new", "m1-2")) },
		"duplicate": func(box string) { writeMail(t, box, "again", "0-0", body) },
		"truncated": func(box string) { writeMail(t, box, "m0-1", "0-1", body[:size-10]) },
		"foreign": func(box string) {
			os.WriteFile(filepath.Join(box, "new", "spam"), []byte("Subject: hi\n\nhello\n"), 0o644)
		},
	} {
		box := good()
		spoil(box)
		err := verifyMaildir(box, 2, 3, size)
		if err == nil || !strings.Contains(err.Error(), "not delivered intact") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestAcceptedCount(t *testing.T) {
	log := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(log, []byte(`Nov 23 16:08:55 mail postfix/smtpd[1]: connect from localhost[127.0.0.1]
Nov 23 16:08:55 mail postfix/cleanup[2]: 5B39098E12E: message-id=<1@client.test>
Nov 23 16:08:55 mail postfix/qmgr[3]: 5B39098E12E: from=<a@client.test>, size=300, nrcpt=1 (queue active)
Nov 23 16:08:55 mail postfix/cleanup[2]: 5F06C98E14A: message-id=<2@client.test>
Nov 23 16:08:55 mail postfix/virtual[4]: 5B39098E12E: to=<inbox@isobench.test>, relay=virtual, status=sent (delivered to maildir)
Nov 23 16:08:55 mail postfix/qmgr[3]: 5B39098E12E: removed
Nov 23 16:08:55 mail postfix/qmgr[3]: 5F06C98E14A: from=<a@client.test>, size=300, nrcpt=1 (queue active)
Nov 23 16:08:56 mail postfix/cleanup[2]: 61A2298E15B: message-id=<3@client.test>
Nov 23 16:08:56 mail postfix/smtpd[1]: lost connection after DATA (2048 bytes) from localhost[127.0.0.1]
Nov 23 16:08:57 mail postfix/qmgr[3]: 5F06C98E14A: from=<a@client.test>, size=300, nrcpt=1 (queue active)
Nov 23 16:08:57 mail postfix/virtual[4]: 5F06C98E14A: to=<inbox@isobench.test>, relay=virtual, status=sent (delivered to maildir)
Nov 23 16:08:57 mail postfix/qmgr[3]: 5F06C98E14A: removed
Nov 23 16:08:58 mail postfix/cleanup[2]: 5B39098E12E: message-id=<4@client.test>
Nov 23 16:08:58 mail postfix/qmgr[3]: 5B39098E12E: from=<a@client.test>, size=300, nrcpt=1 (queue active)
Nov 23 16:08:58 mail postfix/virtual[4]: 5B39098E12E: to=<inbox@isobench.test>, relay=virtual, status=sent (delivered to maildir)
Nov 23 16:08:58 mail postfix/qmgr[3]: 5B39098E12E: removed
`), 0o644)
	// message 3 was cut off mid-DATA (cleanup logged its id, qmgr never
	// saw it); message 2 entered the active queue twice (a retry); message
	// 4 reused message 1's queue ID
	if n := acceptedCount(log); n != 3 {
		t.Errorf("accepted %d, want 3", n)
	}
}
