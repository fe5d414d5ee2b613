package k8s

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
)

func TestBuildPod(t *testing.T) {
	s := platform.Spec{
		Name: "conf-x_1", CPUs: 1.5, Memory: 256 << 20, Storage: platform.StorageVolume,
		Labels: map[string]string{"isobench.run": "abc/def", "bad key!": "x"},
	}
	pd, err := buildPod(s, podOpts{Name: "isobench-conf-x-1-0a0b", Namespace: "ns", Image: "isobench/minimal:d", RuntimeClass: "gvisor", Node: "n1", Session: "s1", Host: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	c := pd.Spec.Containers[0]
	if c.ImagePullPolicy != "Never" || c.Image != "isobench/minimal:d" {
		t.Errorf("image %q pull %q", c.Image, c.ImagePullPolicy)
	}
	want := map[string]string{"cpu": "1500m", "memory": "268435456"}
	if !reflect.DeepEqual(c.Resources.Limits, want) || !reflect.DeepEqual(c.Resources.Requests, want) {
		t.Errorf("resources %+v, want limits = requests = %v", c.Resources, want)
	}
	if pd.Spec.RuntimeClassName != "gvisor" || pd.Spec.NodeName != "n1" || pd.Spec.RestartPolicy != "Never" {
		t.Errorf("spec %+v", pd.Spec)
	}
	if !reflect.DeepEqual(c.Command, []string{image.AgentPath, "agent", "idle"}) {
		t.Errorf("idle command %q", c.Command)
	}
	if len(pd.Spec.Volumes) != 1 || pd.Spec.Volumes[0].EmptyDir == nil || c.VolumeMounts[0].MountPath != guestenv.ScratchDir {
		t.Errorf("storage=volume gave volumes %+v mounts %+v", pd.Spec.Volumes, c.VolumeMounts)
	}
	if c.Env[0] != (envVar{guestenv.ScratchEnv, guestenv.ScratchDir}) {
		t.Errorf("env %+v", c.Env)
	}
	l := pd.Metadata.Labels
	if l["isobench"] != "1" || l["isobench.name"] != "conf-x_1" || l["isobench.run"] != "abc_def" || l[sessionLabel] != "s1" || l[hostLabel] != "h1" {
		t.Errorf("labels %v", l)
	}
	if _, ok := l["bad key!"]; ok {
		t.Errorf("an invalid label key was kept: %v", l)
	}
	// the JSON the apiserver gets
	b, err := json.Marshal(pd)
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`"imagePullPolicy":"Never"`, `"runtimeClassName":"gvisor"`, `"automountServiceAccountToken":false`, `"seccompProfile":{"type":"RuntimeDefault"}`} {
		if !bytes.Contains(b, []byte(frag)) {
			t.Errorf("pod JSON lacks %s: %s", frag, b)
		}
	}
	if bytes.Contains(b, []byte(`"hostNetwork"`)) {
		t.Errorf("bridge pod has hostNetwork: %s", b)
	}
}

func TestBuildPodMainAndNetworks(t *testing.T) {
	pd, err := buildPod(platform.Spec{Main: []string{platform.AgentPlaceholder, "agent", "hello"}, Network: platform.NetHost}, podOpts{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	c := pd.Spec.Containers[0]
	if c.Command[0] != "/bin/sh" || c.Command[len(c.Command)-3] != image.AgentPath || !strings.Contains(c.Command[2], stderrFile) {
		t.Errorf("main command %q", c.Command)
	}
	if !pd.Spec.HostNetwork {
		t.Error("network=host did not set hostNetwork")
	}
	if c.Resources.Limits != nil || c.Resources.Requests != nil {
		t.Errorf("no cpus/memory gave resources %+v", c.Resources)
	}
	for _, n := range []string{platform.NetNone, platform.NetNAT} {
		if _, err := buildPod(platform.Spec{Network: n}, podOpts{Name: "p"}); !errors.Is(err, platform.ErrUnsupported) {
			t.Errorf("network=%s: %v, want ErrUnsupported", n, err)
		}
	}
	if _, err := buildPod(platform.Spec{Network: "bogus"}, podOpts{Name: "p"}); err == nil {
		t.Error("network=bogus accepted")
	}
	if _, err := buildPod(platform.Spec{CPUs: 0.0001}, podOpts{Name: "p"}); err == nil {
		t.Error("cpus below 1m accepted")
	}
}

func TestPodName(t *testing.T) {
	n, err := podName("Conf_Run/7 x")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(n, "isobench-conf-run-7-x-") || len(n) > 63 {
		t.Errorf("pod name %q", n)
	}
	long, _ := podName(strings.Repeat("a", 200))
	if len(long) > 63 {
		t.Errorf("pod name of %d characters", len(long))
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		in      string
		code    int
		wantErr bool
	}{
		{`{"metadata":{},"status":"Success"}`, 0, false},
		{`{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}`, 3, false},
		{`{"metadata":{},"status":"Failure","message":"exec: \"/no/such\": stat /no/such: no such file or directory","reason":"InternalError"}`, -1, true},
		{`not json`, -1, true},
	} {
		code, err := exitCode([]byte(tc.in))
		if code != tc.code || (err != nil) != tc.wantErr {
			t.Errorf("exitCode(%s) = %d, %v", tc.in, code, err)
		}
	}
}

// fakeExecServer speaks the server side of v5.channel.k8s.io: it echoes
// stdin to stdout until the client closes stdin, writes "e" to stderr and
// exits with status 4.
func fakeExecServer(t *testing.T, gotQuery chan<- string) *httptest.Server {
	up := websocket.Upgrader{Subprotocols: []string{protoV5, protoV4}}
	return httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotQuery <- r.URL.Path + "?" + r.URL.RawQuery
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		send := func(ch byte, b []byte) { c.WriteMessage(websocket.BinaryMessage, append([]byte{ch}, b...)) }
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if msg[0] == chanClose && len(msg) == 2 && msg[1] == chanStdin {
				break
			}
			if msg[0] != chanStdin {
				t.Errorf("message on channel %d", msg[0])
				return
			}
			send(chanStdout, msg[1:])
		}
		send(chanStderr, []byte("e"))
		send(chanError, []byte(`{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"4"}]}}`))
		c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	}))
}

func TestExecProtocol(t *testing.T) {
	q := make(chan string, 1)
	srv := fakeExecServer(t, q)
	defer srv.Close()
	c := newClient(endpoint{Server: srv.URL, TLS: &tls.Config{InsecureSkipVerify: true}})
	in := bytes.Repeat([]byte("0123456789"), 10000) // several frames
	var out, errb bytes.Buffer
	code, err := c.exec(context.Background(), "ns", "pod", "main", []string{"sh", "-c", "x y"}, bytes.NewReader(in), &out, &errb)
	if err != nil || code != 4 {
		t.Fatalf("exec = %d, %v; want 4, nil", code, err)
	}
	if !bytes.Equal(out.Bytes(), in) || errb.String() != "e" {
		t.Errorf("stdout %d bytes (want %d), stderr %q", out.Len(), len(in), errb.String())
	}
	got := <-q
	if want := "/api/v1/namespaces/ns/pods/pod/exec?command=sh&command=-c&command=x+y&container=main&stderr=true&stdin=true&stdout=true"; got != want {
		t.Errorf("request %s, want %s", got, want)
	}
}

func TestFrames(t *testing.T) {
	if got := frame(chanStdin, []byte("ab")); !bytes.Equal(got, []byte{0, 'a', 'b'}) {
		t.Errorf("frame %v", got)
	}
	if got := closeFrame(chanStdin); !bytes.Equal(got, []byte{255, 0}) {
		t.Errorf("close frame %v", got)
	}
}

func TestKubeconfig(t *testing.T) {
	dir := t.TempDir()
	kc := `apiVersion: v1
kind: Config
current-context: b
clusters:
- name: c1
  cluster: {server: "https://a:1/", insecure-skip-tls-verify: true}
users:
- name: u1
  user: {token: tok}
contexts:
- name: a
  context: {cluster: nope, user: u1}
- name: b
  context: {cluster: c1, user: u1, namespace: bench}
`
	p := filepath.Join(dir, "config")
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	ep, err := loadKubeconfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Server != "https://a:1" || ep.Token != "tok" || ep.Namespace != "bench" || !ep.TLS.InsecureSkipVerify {
		t.Errorf("endpoint %+v", ep)
	}
	if _, err := parseKubeconfig([]byte(strings.Replace(kc, "current-context: b", "current-context: a", 1)), dir); err == nil {
		t.Error("a context naming a missing cluster was accepted")
	}
	// precedence: option, $KUBECONFIG (first existing), ~/.kube/config
	if got, _ := kubeconfigPath("/x", p, dir); got != "/x" {
		t.Errorf("option: %s", got)
	}
	if got, _ := kubeconfigPath("", "/no/such"+string(filepath.ListSeparator)+p, dir); got != p {
		t.Errorf("$KUBECONFIG: %s", got)
	}
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".kube"), 0o700)
	os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(kc), 0o600)
	if got, _ := kubeconfigPath("", "", home); got != filepath.Join(home, ".kube", "config") {
		t.Errorf("home: %s", got)
	}
}

func TestContainerdRef(t *testing.T) {
	for in, want := range map[string]string{
		"isobench/minimal:abc":       "docker.io/isobench/minimal:abc",
		"registry.k8s.io/pause:3.10": "registry.k8s.io/pause:3.10",
		"localhost/isobench/x:1":     "localhost/isobench/x:1",
	} {
		if got := containerdRef(in); got != want {
			t.Errorf("containerdRef(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestExecStdinOneFramePerMessage reads the client's websocket frames off
// the wire: every stdin message must be one final binary frame, since the
// apiserver's websocket reader takes a continuation frame for a new message
// (and its first byte for the channel), which lost most of a large stdin.
func TestExecStdinOneFramePerMessage(t *testing.T) {
	in := bytes.Repeat([]byte("0123456789abcdef"), 10000) // 160 kB: several messages
	got := make(chan []byte, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		h := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: %s\r\n\r\n",
			base64.StdEncoding.EncodeToString(h[:]), protoV5)
		rw.Flush()
		var stdin []byte
		for {
			var hdr [2]byte
			if _, err := io.ReadFull(rw, hdr[:]); err != nil {
				t.Errorf("reading a frame: %v", err)
				return
			}
			fin, op, n := hdr[0]&0x80 != 0, hdr[0]&0x0f, uint64(hdr[1]&0x7f)
			switch n {
			case 126:
				var b [2]byte
				io.ReadFull(rw, b[:])
				n = uint64(binary.BigEndian.Uint16(b[:]))
			case 127:
				var b [8]byte
				io.ReadFull(rw, b[:])
				n = binary.BigEndian.Uint64(b[:])
			}
			var mask [4]byte
			io.ReadFull(rw, mask[:])
			payload := make([]byte, n)
			if _, err := io.ReadFull(rw, payload); err != nil {
				t.Errorf("reading a frame's payload: %v", err)
				return
			}
			for i := range payload {
				payload[i] ^= mask[i%4]
			}
			if op == 0x8 || op == 0x9 || op == 0xa { // close, ping, pong
				continue
			}
			if !fin || op != 0x2 {
				t.Errorf("a stdin message went out as a frame with FIN %v, opcode %d (want one final binary frame per message)", fin, op)
				return
			}
			if bytes.Equal(payload, closeFrame(chanStdin)) {
				break
			}
			if len(payload) == 0 || payload[0] != chanStdin {
				t.Errorf("frame on channel %v", payload[:1])
				return
			}
			stdin = append(stdin, payload[1:]...)
		}
		got <- stdin
		st := append([]byte{chanError}, `{"status":"Success"}`...)
		rw.Write(append([]byte{0x82, byte(len(st))}, st...))
		rw.Write([]byte{0x88, 2, 0x03, 0xe8}) // close, normal
		rw.Flush()
	}))
	defer srv.Close()
	c := newClient(endpoint{Server: srv.URL, TLS: &tls.Config{InsecureSkipVerify: true}})
	code, err := c.exec(context.Background(), "ns", "pod", "main", []string{"cat"}, bytes.NewReader(in), io.Discard, io.Discard)
	if err != nil || code != 0 {
		t.Fatalf("exec = %d, %v; want 0, nil", code, err)
	}
	select {
	case s := <-got:
		if !bytes.Equal(s, in) {
			t.Errorf("the server got %d bytes of stdin, want the %d sent", len(s), len(in))
		}
	default:
		t.Fatal("the server did not see stdin closed")
	}
}

// TestCleanPodsHosts: CleanPods deletes only the pods this host made whose
// run is dead; another host's pods on a shared cluster are left alone
// silently, pods without a host label are kept with a word. With no
// apiserver answering it says nothing and succeeds.
func TestCleanPodsHosts(t *testing.T) {
	host := thisHost()
	pods := `{"items":[
{"metadata":{"namespace":"a","name":"mine-dead","labels":{"isobench":"1","isobench.run":"dead1","isobench.k8s.host":"` + host + `"}}},
{"metadata":{"namespace":"a","name":"mine-live","labels":{"isobench":"1","isobench.run":"live1","isobench.k8s.host":"` + host + `"}}},
{"metadata":{"namespace":"b","name":"theirs-dead","labels":{"isobench":"1","isobench.run":"dead1","isobench.k8s.host":"` + host + `x"}}},
{"metadata":{"namespace":"b","name":"nohost","labels":{"isobench":"1","isobench.run":"dead1"}}}]}`
	deleted := make(chan string, 10)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/version":
			w.Write([]byte(`{"gitVersion":"v1.37.2"}`))
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/pods":
			if r.URL.Query().Get("labelSelector") != "isobench=1" {
				t.Errorf("pods listed with selector %q", r.URL.Query().Get("labelSelector"))
			}
			w.Write([]byte(pods))
		case r.Method == http.MethodDelete:
			deleted <- r.URL.Path
			w.Write([]byte(`{}`))
		default:
			http.Error(w, "unexpected", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	kc := filepath.Join(t.TempDir(), "config")
	os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster: {server: \""+srv.URL+"\", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n"), 0o600)
	judge := func(tok string) (bool, string) {
		if tok == "dead1" {
			return true, "run " + tok
		}
		return false, "" // a live run's: kept without a word, as cleanup.Judge does
	}
	var out strings.Builder
	if err := CleanPods(context.Background(), &out, kc, judge, false); err != nil {
		t.Fatal(err)
	}
	close(deleted)
	var got []string
	for p := range deleted {
		got = append(got, p)
	}
	if !reflect.DeepEqual(got, []string{"/api/v1/namespaces/a/pods/mine-dead"}) {
		t.Errorf("deleted %q, want only a/mine-dead", got)
	}
	want := "removed k8s-pod a/mine-dead (run dead1)\nkept k8s-pod b/nohost: it does not say which host's isobench made it\n"
	if out.String() != want {
		t.Errorf("CleanPods said %q, want %q", out.String(), want)
	}
	// no cluster: nothing said, no error
	srv.Close()
	out.Reset()
	if err := CleanPods(context.Background(), &out, kc, judge, false); err != nil || out.Len() != 0 {
		t.Errorf("with no apiserver: %v, %q; want nil and nothing said", err, out.String())
	}
}
