package k8s

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

// DefaultPending is how long a pod may stay Pending (unscheduled, or its
// container not started) before Create gives up on it, unless the
// platform's pending= option says otherwise.
const DefaultPending = 3 * time.Minute

// PodError is why Kubernetes did not run a pod, or stopped it, in
// Kubernetes' own words: the scheduler's PodScheduled condition
// (Unschedulable: "0/1 nodes are available: 1 Insufficient memory."), the
// kubelet's eviction (Evicted), the container's state (OOMKilled,
// CreateContainerError, ...) and the newest warning event about the pod.
type PodError struct {
	Pod     string
	Reason  string        // Kubernetes' reason: Unschedulable, Evicted, OOMKilled, a container's waiting reason, or "Pending"
	Message string        // Kubernetes' message for it
	Event   string        // the newest warning event about the pod ("Reason: message"), or ""
	Pending time.Duration // the bound a pod that never started passed (0: it failed before it)
}

func (e *PodError) Error() string {
	var b strings.Builder
	b.WriteString("pod " + e.Pod + ": ")
	if e.Pending > 0 {
		fmt.Fprintf(&b, "still not running after %v: ", e.Pending)
	}
	b.WriteString(e.Reason)
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Event != "" && !strings.Contains(b.String(), eventMessage(e.Event)) {
		b.WriteString("; last event: " + e.Event)
	}
	return b.String()
}

// eventMessage is the message part of "Reason: message".
func eventMessage(ev string) string {
	if _, m, ok := strings.Cut(ev, ": "); ok {
		return m
	}
	return ev
}

// failure says why Kubernetes stopped the pod or gave up on it (evicted,
// failed by the kubelet, its container OOM-killed), nil while it runs or
// after its container ended by itself.
func (p *pod) failure() *PodError {
	if p.Status.Phase == "Failed" && p.Status.Reason != "" {
		// Evicted, OutOfmemory, OutOfcpu, NodeAffinity, Shutdown...
		return &PodError{Pod: p.Metadata.Name, Reason: p.Status.Reason, Message: p.Status.Message}
	}
	if st := p.mainState(); st != nil && st.Terminated != nil && st.Terminated.Reason == "OOMKilled" {
		msg := fmt.Sprintf("the container was killed by the OOM killer (exit code %d", st.Terminated.ExitCode)
		if len(p.Spec.Containers) > 0 {
			if l := p.Spec.Containers[0].Resources.Limits["memory"]; l != "" {
				msg += ", memory limit " + humanQuantity("memory", l)
			}
		}
		msg += ")"
		if st.Terminated.Message != "" {
			msg += ": " + st.Terminated.Message
		}
		return &PodError{Pod: p.Metadata.Name, Reason: "OOMKilled", Message: msg}
	}
	return nil
}

// unschedulable returns the scheduler's message when it found no node
// for the pod.
func (p *pod) unschedulable() (string, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == "PodScheduled" && c.Status == "False" && c.Reason == "Unschedulable" {
			return c.Message, true
		}
	}
	return "", false
}

// pendingReason is the most specific reason Kubernetes gives for a pod
// that is not running yet.
func (p *pod) pendingReason() (reason, msg string) {
	if m, ok := p.unschedulable(); ok {
		return "Unschedulable", m
	}
	if st := p.mainState(); st != nil && st.Waiting != nil && st.Waiting.Reason != "" {
		return st.Waiting.Reason, st.Waiting.Message
	}
	if p.Status.Reason != "" {
		return p.Status.Reason, p.Status.Message
	}
	return "Pending", "phase " + p.Status.Phase
}

// parseQuantity reads a Kubernetes resource quantity ("23Gi", "1500m",
// "2", "128974848", "12e6", "5k") as a number of units (bytes, cores).
func parseQuantity(s string) (float64, error) {
	s = strings.TrimSpace(s)
	scale := 1.0
	num := s
	bin := map[string]float64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
	dec := map[byte]float64{'n': 1e-9, 'u': 1e-6, 'm': 1e-3, 'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18}
	if len(s) > 2 && bin[s[len(s)-2:]] != 0 {
		num, scale = s[:len(s)-2], bin[s[len(s)-2:]]
	} else if len(s) > 1 && dec[s[len(s)-1]] != 0 {
		if _, err := strconv.ParseFloat(s, 64); err != nil { // "12e6" is a number, "1E" is not
			num, scale = s[:len(s)-1], dec[s[len(s)-1]]
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("k8s: quantity %q is not a resource quantity", s)
	}
	return v * scale, nil
}

// humanQuantity writes a quantity of memory in binary units, exactly when
// that takes few digits ("32Mi", "100000Gi"), else to a tenth of the
// largest unit ("23.4Gi"); other quantities as they are.
func humanQuantity(resource, q string) string {
	v, err := parseQuantity(q)
	if resource != "memory" || err != nil {
		return q
	}
	units := []struct {
		s string
		b float64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}}
	for _, u := range units {
		if n := v / u.b; n >= 1 && n < 1e6 && n == math.Trunc(n) {
			return strconv.FormatFloat(n, 'f', -1, 64) + u.s
		}
	}
	for _, u := range units {
		if v >= u.b {
			return strconv.FormatFloat(math.Round(v/u.b*10)/10, 'f', -1, 64) + u.s
		}
	}
	return q
}

// neverFits says whether a pod the scheduler calls unschedulable asks for
// more of a resource than any node has allocatable at all (so waiting
// cannot help), and what: "it requests memory 100000Gi; the most any of
// the 1 node(s) can give is 22.9Gi (isobench-k8s)". A node list it may not
// read is "don't know": false.
func (p *Platform) neverFits(ctx context.Context, pd *pod) (string, bool) {
	want := map[string]float64{}
	for _, c := range pd.Spec.Containers {
		for k, v := range c.Resources.Requests {
			if k != "cpu" && k != "memory" {
				continue
			}
			q, err := parseQuantity(v)
			if err != nil {
				return "", false
			}
			want[k] += q
		}
	}
	if len(want) == 0 {
		return "", false
	}
	var nodes struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
			Status   struct {
				Allocatable map[string]string `json:"allocatable"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := p.c.do(ctx, http.MethodGet, "/api/v1/nodes", nil, nil, &nodes); err != nil || len(nodes.Items) == 0 {
		return "", false
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		best, bestNode, bestRaw := -1.0, "", ""
		for _, n := range nodes.Items {
			q, err := parseQuantity(n.Status.Allocatable[k])
			if err != nil {
				return "", false
			}
			if q > best {
				best, bestNode, bestRaw = q, n.Metadata.Name, n.Status.Allocatable[k]
			}
		}
		if want[k] > best {
			req := ""
			if len(pd.Spec.Containers) > 0 {
				req = pd.Spec.Containers[0].Resources.Requests[k]
			}
			return fmt.Sprintf("it requests %s %s; the most any of the %d node(s) can give is %s (%s)", k, humanQuantity(k, req), len(nodes.Items), humanQuantity(k, bestRaw), bestNode), true
		}
	}
	return "", false
}

// uninformative are warning events that never say why a pod failed: the
// kubelet warns of every pod that asks for cluster DNS on a cluster
// without it (isobench's own single-node cluster).
var uninformative = map[string]bool{"MissingClusterDNS": true}

// podEvent returns the newest warning event about the pod as "Reason:
// message", or "".
func (p *Platform) podEvent(ctx context.Context, name, uid string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	q := url.Values{}
	q.Set("fieldSelector", "involvedObject.kind=Pod,involvedObject.name="+name)
	var l struct {
		Items []struct {
			Type           string `json:"type"`
			Reason         string `json:"reason"`
			Message        string `json:"message"`
			LastTimestamp  string `json:"lastTimestamp"`
			EventTime      string `json:"eventTime"`
			InvolvedObject struct {
				UID string `json:"uid"`
			} `json:"involvedObject"`
		} `json:"items"`
	}
	if err := p.c.do(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(p.ns())+"/events", q, nil, &l); err != nil {
		return ""
	}
	best, bestAt := "", ""
	for _, e := range l.Items {
		if uid != "" && e.InvolvedObject.UID != "" && e.InvolvedObject.UID != uid {
			continue // an earlier pod of the same name
		}
		if e.Type != "Warning" || uninformative[e.Reason] {
			continue
		}
		at := e.LastTimestamp
		if at == "" {
			at = e.EventTime
		}
		// RFC 3339 times in UTC compare as strings
		if best == "" || at >= bestAt {
			best, bestAt = e.Reason+": "+e.Message, at
		}
	}
	return strings.TrimSpace(best)
}

// withEvent fills a PodError's Event from the cluster's events.
func (p *Platform) withEvent(ctx context.Context, pe *PodError, uid string) *PodError {
	if pe.Event == "" {
		pe.Event = p.podEvent(context.WithoutCancel(ctx), pe.Pod, uid)
	}
	return pe
}

// podFailure returns the pod's failure (evicted, OOM-killed, failed by
// the kubelet) with its newest warning event, or nil: what an exec that
// broke off or a process killed with status 137 is explained by.
func (in *Instance) podFailure(ctx context.Context) *PodError {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var cur pod
	if err := in.p.c.do(ctx, http.MethodGet, in.podPath(), nil, nil, &cur); err != nil || cur.Metadata.UID != in.uid {
		return nil
	}
	f := cur.failure()
	if f == nil {
		return nil
	}
	return in.p.withEvent(ctx, f, in.uid)
}

var _ platform.OOMReporter = (*Instance)(nil)

// OOMKilled implements platform.OOMReporter: the main container's state
// says OOMKilled, or, for a process run with exec (the OOM killer takes
// it and the pod runs on, so Kubernetes says nothing), the OOM kill
// counters of the pod's memory cgroups on its node, which must be this
// host.
func (in *Instance) OOMKilled(ctx context.Context) (bool, error) {
	var cur pod
	if err := in.p.c.do(ctx, http.MethodGet, in.podPath(), nil, nil, &cur); err != nil {
		return false, fmt.Errorf("k8s: pod %s: %w", in.name, err)
	}
	if cur.Metadata.UID != in.uid {
		return false, fmt.Errorf("k8s: pod %s is gone", in.name)
	}
	if f := cur.failure(); f != nil && f.Reason == "OOMKilled" {
		return true, nil
	}
	if cur.Status.HostIP == "" || !isLocalIP(cur.Status.HostIP) {
		return false, fmt.Errorf("k8s: pod %s runs on node %s, not on this host: %w (its memory cgroup is read on the node)", in.name, cur.Spec.NodeName, platform.ErrUnsupported)
	}
	mem, _, err := podCgroups(in.uid)
	if err != nil {
		return false, fmt.Errorf("k8s: pod %s: %w", in.name, err)
	}
	n, err := cgroupTreeOOMKills(mem)
	if err != nil {
		return false, fmt.Errorf("k8s: pod %s: %w", in.name, err)
	}
	return n > 0, nil
}

// cgroupTreeOOMKills adds up the OOM kill counters of the memory cgroup
// dir and every group below it (cgroup v1 counts a kill only in the group
// of the process killed).
func cgroupTreeOOMKills(dir string) (int64, error) {
	var total int64
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil // a container's group went meanwhile
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		n, err := hostos.CgroupOOMKills(path)
		if err != nil {
			return nil // no counter here (a kernel before 4.13): the others may have one
		}
		found = true
		total += n
		return nil
	})
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no OOM kill counter in %s", dir)
	}
	return total, nil
}
