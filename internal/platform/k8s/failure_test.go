package k8s

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
)

func TestParseQuantity(t *testing.T) {
	for in, want := range map[string]float64{
		"2": 2, "1500m": 1.5, "23Gi": 23 << 30, "24358604Ki": 24358604 << 10, "128974848": 128974848,
		"12e6": 12e6, "5k": 5000, "1E": 1e18, "100000Gi": 100000 << 30, "0.5": 0.5, "64Mi": 64 << 20,
	} {
		got, err := parseQuantity(in)
		if err != nil || got != want {
			t.Errorf("parseQuantity(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "Gi", "x", "-1", "1Qi", "NaN"} {
		if v, err := parseQuantity(in); err == nil {
			t.Errorf("parseQuantity(%q) = %v, want an error", in, v)
		}
	}
	for in, want := range map[string]string{
		"107374182400k": "100000Gi", "24581692Ki": "23.4Gi", "33554432": "32Mi", "1Ti": "1Ti", "500": "500", "junk": "junk",
	} {
		if got := humanQuantity("memory", in); got != want {
			t.Errorf("humanQuantity(memory, %q) = %q, want %q", in, got, want)
		}
	}
	if got := humanQuantity("cpu", "1500m"); got != "1500m" {
		t.Errorf("humanQuantity(cpu, 1500m) = %q", got)
	}
}

// fakeCluster is an apiserver that knows one pod (as JSON), the nodes and
// the events: GET answers them, a watch holds still until the client
// gives up.
func fakeCluster(t *testing.T, podJSON, nodesJSON, eventsJSON string, extra ...string) *Platform {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "1":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/default/pods/"):
			w.Write([]byte(podJSON))
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes":
			w.Write([]byte(nodesJSON))
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/default/events":
			w.Write([]byte(eventsJSON))
		default:
			http.Error(w, `{"message":"unexpected"}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster: {server: \""+srv.URL+"\", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ex := map[string]string{"kubeconfig": kc}
	for i := 0; i+1 < len(extra); i += 2 {
		ex[extra[i]] = extra[i+1]
	}
	p, err := NewPlatform(platform.Options{Extra: ex}, platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	oneNode = `{"items":[{"metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"2","memory":"23Gi"}}}]}`
	// what the scheduler says of a pod no node has room for
	unschedPod = `{"metadata":{"name":"p1","uid":"u1"},
"spec":{"containers":[{"name":"main","resources":{"requests":{"memory":"%s"},"limits":{"memory":"%s"}}}]},
"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable",
"message":"0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."}]}}`
	schedEvents = `{"items":[{"type":"Warning","reason":"FailedScheduling","message":"0/1 nodes are available: 1 Insufficient memory.","lastTimestamp":"2026-11-26T10:00:00Z","involvedObject":{"uid":"u1"}},
{"type":"Normal","reason":"Something","message":"later but not a warning","lastTimestamp":"2026-11-26T10:00:05Z","involvedObject":{"uid":"u1"}},
{"type":"Warning","reason":"MissingClusterDNS","message":"later but says nothing of why","lastTimestamp":"2026-11-26T10:00:06Z","involvedObject":{"uid":"u1"}},
{"type":"Warning","reason":"Old","message":"an earlier pod of the same name","lastTimestamp":"2026-11-26T11:00:00Z","involvedObject":{"uid":"u0"}}]}`
)

// TestUnschedulableNeverFits: a pod asking for more memory than any node
// has allocatable fails at once, with the scheduler's reason and how much
// the largest node can give, not after the pending bound.
func TestUnschedulableNeverFits(t *testing.T) {
	p := fakeCluster(t, strings.ReplaceAll(unschedPod, "%s", "100000Gi"), oneNode, schedEvents, "pending", "1h")
	done := make(chan error, 1)
	go func() {
		_, err := p.waitStarted(t.Context(), "p1", "u1", p.pending)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute): // a deadlock guard, not a timing assertion: the bound is an hour
		t.Fatal("waitStarted waited for the bound on a pod no node can take")
	}
	var pe *PodError
	if !errors.As(err, &pe) || pe.Reason != "Unschedulable" || pe.Pending != 0 {
		t.Fatalf("waitStarted: %v, want an Unschedulable PodError before the bound", err)
	}
	for _, want := range []string{"Insufficient memory", "it requests memory 100000Gi; the most any of the 1 node(s) can give is 23Gi (n1)", "pod p1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestPendingBound: a pod the scheduler cannot place now but that would
// fit a node is waited for until the pending bound, then it is a failure
// with the scheduler's reason and the newest warning event about it (of
// this pod, not of an earlier one of the same name).
func TestPendingBound(t *testing.T) {
	p := fakeCluster(t, strings.ReplaceAll(unschedPod, "%s", "1Gi"), oneNode, schedEvents, "pending", "300ms")
	if p.pending != 300*time.Millisecond {
		t.Fatalf("pending=300ms gave %v", p.pending)
	}
	_, err := p.waitStarted(t.Context(), "p1", "u1", p.pending)
	var pe *PodError
	if !errors.As(err, &pe) || pe.Reason != "Unschedulable" || pe.Pending != 300*time.Millisecond {
		t.Fatalf("waitStarted: %v, want an Unschedulable PodError after the bound", err)
	}
	if pe.Event != "FailedScheduling: 0/1 nodes are available: 1 Insufficient memory." {
		t.Errorf("event %q, want the scheduler's warning about this pod", pe.Event)
	}
	if !strings.Contains(err.Error(), "still not running after 300ms: Unschedulable: 0/1 nodes are available: 1 Insufficient memory.") {
		t.Errorf("error %q", err)
	}
	if _, err := NewPlatform(platform.Options{Extra: map[string]string{"pending": "soon"}}, platform.Env{}); err == nil {
		t.Error("pending=soon was accepted")
	}
}

// TestEvictedAndOOMKilled: Wait on an evicted pod or on one whose main
// container the OOM killer took returns Kubernetes' reason as a PodError
// (not just an exit status); Create's wait for a pod evicted before it ran
// fails the same way.
func TestEvictedAndOOMKilled(t *testing.T) {
	evicted := `{"metadata":{"name":"p1","uid":"u1"},"spec":{"containers":[{"name":"main"}]},
"status":{"phase":"Failed","reason":"Evicted","message":"The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi.",
"containerStatuses":[{"name":"main","state":{"terminated":{"exitCode":137,"reason":"ContainerStatusUnknown"}}}]}}`
	oom := `{"metadata":{"name":"p1","uid":"u1"},"spec":{"containers":[{"name":"main","resources":{"limits":{"memory":"32Mi"}}}]},
"status":{"phase":"Failed","containerStatuses":[{"name":"main","state":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}}`
	ended := `{"metadata":{"name":"p1","uid":"u1"},"status":{"phase":"Failed","containerStatuses":[{"name":"main","state":{"terminated":{"exitCode":3,"reason":"Error"}}}]}}`
	for _, c := range []struct {
		name, pod, reason, says string
		code                    int
	}{
		{"evicted", evicted, "Evicted", "The node was low on resource: memory", 137},
		{"oom", oom, "OOMKilled", "OOM killer (exit code 137, memory limit 32Mi)", 137},
		{"exit", ended, "", "", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := fakeCluster(t, c.pod, oneNode, `{"items":[]}`)
			in := &Instance{p: p, name: "p1", uid: "u1", gone: make(chan struct{})}
			code, err := in.Wait(t.Context())
			if code != c.code {
				t.Errorf("Wait code %d, want %d", code, c.code)
			}
			var pe *PodError
			if c.reason == "" {
				if err != nil {
					t.Errorf("Wait of a main that exited by itself: %v", err)
				}
				return
			}
			if !errors.As(err, &pe) || pe.Reason != c.reason || !strings.Contains(err.Error(), c.says) {
				t.Errorf("Wait: %v, want a %s PodError saying %q", err, c.reason, c.says)
			}
			_, err = p.waitStarted(t.Context(), "p1", "u1", time.Hour)
			if c.reason == "Evicted" && (!errors.As(err, &pe) || pe.Reason != "Evicted") {
				t.Errorf("waitStarted of an evicted pod: %v", err)
			}
			if c.reason == "OOMKilled" && err != nil {
				t.Errorf("waitStarted of a pod whose main ran and was OOM-killed: %v (it started; Wait says the rest)", err)
			}
		})
	}
}
