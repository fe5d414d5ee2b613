package k8s

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
)

// containerName is the name of the one container of every pod.
const containerName = "main"

// stderrFile is where a main process's stderr goes inside the pod, so that
// the pod's log (which Kubernetes merges from stdout and stderr) is stdout
// only.
const stderrFile = "/tmp/.isobench-main.stderr"

// Pod objects, the part isobench writes and reads.
type (
	objectMeta struct {
		Name              string            `json:"name,omitempty"`
		Namespace         string            `json:"namespace,omitempty"`
		Labels            map[string]string `json:"labels,omitempty"`
		UID               string            `json:"uid,omitempty"`
		ResourceVersion   string            `json:"resourceVersion,omitempty"`
		DeletionTimestamp string            `json:"deletionTimestamp,omitempty"`
	}
	envVar struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	resources struct {
		Limits   map[string]string `json:"limits,omitempty"`
		Requests map[string]string `json:"requests,omitempty"`
	}
	volumeMount struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	}
	container struct {
		Name            string        `json:"name"`
		Image           string        `json:"image"`
		ImagePullPolicy string        `json:"imagePullPolicy"`
		Command         []string      `json:"command"`
		Env             []envVar      `json:"env,omitempty"`
		Resources       resources     `json:"resources"`
		VolumeMounts    []volumeMount `json:"volumeMounts,omitempty"`
	}
	volume struct {
		Name     string    `json:"name"`
		EmptyDir *struct{} `json:"emptyDir,omitempty"`
	}
	seccompProfile struct {
		Type string `json:"type"`
	}
	podSecurityContext struct {
		SeccompProfile *seccompProfile `json:"seccompProfile,omitempty"`
	}
	podSpec struct {
		Containers                    []container         `json:"containers"`
		Volumes                       []volume            `json:"volumes,omitempty"`
		RestartPolicy                 string              `json:"restartPolicy"`
		RuntimeClassName              string              `json:"runtimeClassName,omitempty"`
		NodeName                      string              `json:"nodeName,omitempty"`
		HostNetwork                   bool                `json:"hostNetwork,omitempty"`
		AutomountServiceAccountToken  *bool               `json:"automountServiceAccountToken,omitempty"`
		EnableServiceLinks            *bool               `json:"enableServiceLinks,omitempty"`
		TerminationGracePeriodSeconds *int64              `json:"terminationGracePeriodSeconds,omitempty"`
		SecurityContext               *podSecurityContext `json:"securityContext,omitempty"`
	}
	containerState struct {
		Waiting *struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"waiting,omitempty"`
		Running *struct {
			StartedAt string `json:"startedAt"`
		} `json:"running,omitempty"`
		Terminated *struct {
			ExitCode int    `json:"exitCode"`
			Reason   string `json:"reason"`
			Message  string `json:"message"`
		} `json:"terminated,omitempty"`
	}
	containerStatus struct {
		Name        string         `json:"name"`
		State       containerState `json:"state"`
		ContainerID string         `json:"containerID"`
	}
	podStatus struct {
		Phase      string `json:"phase"`
		Reason     string `json:"reason"`
		Message    string `json:"message"`
		PodIP      string `json:"podIP"`
		HostIP     string `json:"hostIP"`
		QOSClass   string `json:"qosClass"`
		Conditions []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
		ContainerStatuses []containerStatus `json:"containerStatuses"`
	}
	pod struct {
		APIVersion string     `json:"apiVersion"`
		Kind       string     `json:"kind"`
		Metadata   objectMeta `json:"metadata"`
		Spec       podSpec    `json:"spec"`
		Status     podStatus  `json:"status,omitempty"`
	}
)

// mainState is the state of the pod's container, nil before it has one.
func (p *pod) mainState() *containerState {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == containerName {
			return &p.Status.ContainerStatuses[i].State
		}
	}
	return nil
}

// fatalWaiting are container waiting reasons that will not resolve by
// themselves with restartPolicy Never and imagePullPolicy Never.
var fatalWaiting = map[string]bool{
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"CrashLoopBackOff":           true,
}

// startError says why the pod cannot start, or nil while it may still.
func (p *pod) startError() *PodError {
	if st := p.mainState(); st != nil && st.Waiting != nil && fatalWaiting[st.Waiting.Reason] {
		return &PodError{Pod: p.Metadata.Name, Reason: st.Waiting.Reason, Message: st.Waiting.Message}
	}
	if f := p.failure(); f != nil && f.Reason != "OOMKilled" {
		return f // evicted, or refused by the kubelet (OutOfmemory...); an OOM-killed main ran: Wait says so
	}
	if p.Status.Phase == "Failed" && p.mainState() == nil {
		return &PodError{Pod: p.Metadata.Name, Reason: "Failed", Message: strings.TrimSpace(p.Status.Reason + " " + p.Status.Message)}
	}
	return nil
}

// podOpts are what a pod is made from besides the platform.Spec.
type podOpts struct {
	Name         string // the pod's name
	Namespace    string
	Image        string // image reference
	RuntimeClass string
	Node         string
	Session      string // label value shared by the pods of one Platform
	Host         string // label value naming the host whose isobench made the pod
}

// dnsName turns s into a DNS-1123 label fragment (lower case, digits and
// '-'), at most max characters, not starting or ending with '-'.
func dnsName(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	if len(out) > max {
		out = out[:max]
	}
	return strings.Trim(out, "-")
}

// podName makes a unique pod name from the spec's name.
func podName(name string) (string, error) {
	r := make([]byte, 4)
	if _, err := rand.Read(r); err != nil {
		return "", fmt.Errorf("k8s: random name: %w", err)
	}
	base := dnsName(name, 40)
	if base == "" {
		return "isobench-" + hex.EncodeToString(r), nil
	}
	return "isobench-" + base + "-" + hex.EncodeToString(r), nil
}

// labelValue makes a valid label value (at most 63 characters of
// alphanumerics, '-', '_' and '.', starting and ending alphanumeric).
func labelValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if len(out) > 63 {
		out = out[:63]
	}
	return strings.Trim(out, "-_.")
}

// validLabelKey accepts [prefix/]name keys the way the apiserver does,
// roughly: a name of at most 63 alphanumerics, '-', '_', '.'.
func validLabelKey(k string) bool {
	name := k
	if i := strings.LastIndexByte(k, '/'); i >= 0 {
		if i == 0 || i > 253 {
			return false
		}
		name = k[i+1:]
	}
	return name != "" && len(name) <= 63 && labelValue(name) == name
}

// cpuQuantity renders cores as millicores ("1500m"); 0 is no limit.
func cpuQuantity(cpus float64) string {
	return strconv.FormatInt(int64(math.Round(cpus*1000)), 10) + "m"
}

// buildPod makes the pod for s: one container from the image, running the
// idle agent or s.Main, limits equal to requests (Guaranteed QoS when both
// are set), the scratch directory on an emptyDir with storage=volume, the
// host's network with network=host.
func buildPod(s platform.Spec, o podOpts) (*pod, error) {
	if s.CPUs < 0 || s.Memory < 0 || math.IsNaN(s.CPUs) || math.IsInf(s.CPUs, 0) {
		return nil, errors.New("k8s: cpus and memory must not be negative")
	}
	if s.CPUs > 0 && math.Round(s.CPUs*1000) < 1 {
		return nil, fmt.Errorf("k8s: cpus=%g is below Kubernetes' 1m granularity", s.CPUs)
	}
	hostNet := false
	switch s.Network {
	case platform.NetDefault, platform.NetBridge:
	case platform.NetHost:
		hostNet = true
	case platform.NetNone:
		return nil, fmt.Errorf("k8s: network=none: %w (every pod has the cluster network)", platform.ErrUnsupported)
	case platform.NetNAT:
		return nil, fmt.Errorf("k8s: network=nat: %w (use the Pod IP, or network=host)", platform.ErrUnsupported)
	default:
		return nil, fmt.Errorf("k8s: network %q must be bridge or host", s.Network)
	}
	switch s.Storage {
	case "", platform.StorageRootfs, platform.StorageVolume:
	default:
		return nil, fmt.Errorf("k8s: storage %q must be rootfs or volume", s.Storage)
	}
	cmd := []string{image.AgentPath, "agent", "idle"}
	if len(s.Main) > 0 {
		argv := platform.AgentArgv(s.Main, image.AgentPath)
		// the pod log merges stdout and stderr: keep stderr out of it
		cmd = append([]string{"/bin/sh", "-c", `exec "$@" 2>>` + stderrFile, "sh"}, argv...)
	}
	labels := map[string]string{}
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if validLabelKey(k) {
			labels[k] = labelValue(s.Labels[k])
		}
	}
	labels[platform.Label] = "1"
	if s.Name != "" {
		labels[platform.Label+".name"] = labelValue(s.Name)
	}
	if o.Session != "" {
		labels[sessionLabel] = o.Session
	}
	if o.Host != "" {
		labels[hostLabel] = o.Host
	}
	c := container{
		Name:            containerName,
		Image:           o.Image,
		ImagePullPolicy: "Never",
		Command:         cmd,
		Env:             []envVar{{Name: guestenv.ScratchEnv, Value: guestenv.ScratchDir}},
	}
	lim := map[string]string{}
	if s.CPUs > 0 {
		lim["cpu"] = cpuQuantity(s.CPUs)
	}
	if s.Memory > 0 {
		lim["memory"] = strconv.FormatInt(s.Memory, 10)
	}
	if len(lim) > 0 {
		c.Resources.Limits = lim
		req := map[string]string{}
		for k, v := range lim {
			req[k] = v
		}
		c.Resources.Requests = req
	}
	f, one := false, int64(1)
	ps := podSpec{
		RestartPolicy:                 "Never",
		RuntimeClassName:              o.RuntimeClass,
		NodeName:                      o.Node,
		HostNetwork:                   hostNet,
		AutomountServiceAccountToken:  &f,
		EnableServiceLinks:            &f,
		TerminationGracePeriodSeconds: &one,
		SecurityContext:               &podSecurityContext{SeccompProfile: &seccompProfile{Type: "RuntimeDefault"}},
	}
	if s.Storage == platform.StorageVolume {
		ps.Volumes = []volume{{Name: "scratch", EmptyDir: &struct{}{}}}
		c.VolumeMounts = []volumeMount{{Name: "scratch", MountPath: guestenv.ScratchDir}}
	}
	ps.Containers = []container{c}
	return &pod{
		APIVersion: "v1",
		Kind:       "Pod",
		Metadata:   objectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels},
		Spec:       ps,
	}, nil
}
