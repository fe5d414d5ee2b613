package k8s

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"time"

	"github.com/isobench/isobench/internal/platform"
)

// hostLabel names the host whose isobench made a pod: `isobench clean` on
// one host leaves the pods other hosts' runs have on a shared cluster alone.
const hostLabel = "isobench.k8s.host"

// runLabel is the run token the runner puts on every instance
// (runner.RunLabel; not imported, the runner imports platforms).
const runLabel = "isobench.run"

// thisHost is the value of hostLabel for pods made here.
func thisHost() string {
	h, _ := os.Hostname()
	return labelValue(h)
}

// LeftoverPod is an isobench pod found on the cluster.
type LeftoverPod struct {
	Namespace, Name string
	Token           string // its run's token (label isobench.run), or ""
	Host            string // the host whose isobench made it (label isobench.k8s.host), or ""
	Deleting        bool   // already being deleted
}

// listPods lists the pods labelled isobench=1 in every namespace, or in
// the kubeconfig's namespace when its user may not list them all.
func (p *Platform) listPods(ctx context.Context) ([]LeftoverPod, error) {
	q := url.Values{}
	q.Set("labelSelector", platform.Label+"=1")
	var l struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
		} `json:"items"`
	}
	err := p.c.do(ctx, http.MethodGet, "/api/v1/pods", q, nil, &l)
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == http.StatusForbidden {
		err = p.c.do(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(p.ns())+"/pods", q, nil, &l)
	}
	if err != nil {
		return nil, fmt.Errorf("k8s: listing isobench pods: %w", err)
	}
	var out []LeftoverPod
	for _, it := range l.Items {
		m := it.Metadata
		out = append(out, LeftoverPod{Namespace: m.Namespace, Name: m.Name, Token: m.Labels[runLabel], Host: m.Labels[hostLabel], Deleting: m.DeletionTimestamp != ""})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Sweep lists what Kubernetes pods may have left (platform.Factory.Sweep),
// for 'isobench clean' only (env.Clean; the sweep before a run asks no
// cluster): this host's isobench pods on the cluster the usual kubeconfig
// names (sweepPods), and what the local cluster's runtimes left when it
// died (node.leftovers).
func Sweep(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
	if !env.Clean {
		return nil, nil
	}
	pods, err := sweepPods(ctx, "")
	return append(pods, hostNode().leftovers()...), err
}

// sweepPods lists, on the cluster the usual kubeconfig names (kubeconfig=
// option, $KUBECONFIG, ~/.kube/config, the local test cluster's;
// kubeconfig overrides), the isobench pods this host made (Kind "k8s-pod",
// Name namespace/name), each with its run token (package cleanup removes
// those whose run is over; none: a pod without one), and pods that do not
// say which host made them as kept. Other hosts' pods on a shared cluster
// are not listed. With no kubeconfig, or an apiserver that does not answer
// within a few seconds, it lists nothing: there is no cluster.
func sweepPods(ctx context.Context, kubeconfig string) ([]platform.Leftover, error) {
	p, err := NewPlatform(platform.Options{Extra: map[string]string{"kubeconfig": kubeconfig}}, platform.Env{})
	if err != nil || p.cfgErr != nil {
		return nil, nil
	}
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = p.Version(vctx)
	cancel()
	if err != nil {
		p.c.http.CloseIdleConnections()
		return nil, nil
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	pods, err := p.listPods(lctx)
	cancel()
	if err != nil {
		p.c.http.CloseIdleConnections()
		return nil, err
	}
	host := thisHost()
	var out []platform.Leftover
	for _, pd := range pods {
		if pd.Host != host {
			if pd.Host == "" {
				out = append(out, platform.Leftover{Kind: "k8s-pod", Name: pd.Namespace + "/" + pd.Name,
					Judge: func() (bool, string) { return false, "it does not say which host's isobench made it" }})
			}
			continue // another host's, on a shared cluster
		}
		out = append(out, platform.Leftover{Kind: "k8s-pod", Name: pd.Namespace + "/" + pd.Name, Token: pd.Token,
			Remove: func(ctx context.Context) error {
				ctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				return p.deletePod(ctx, pd.Namespace, pd.Name)
			}})
	}
	return out, nil
}

// deletePod deletes one pod (gone already is fine).
func (p *Platform) deletePod(ctx context.Context, ns, name string) error {
	q := url.Values{}
	q.Set("gracePeriodSeconds", "1")
	err := p.c.do(ctx, http.MethodDelete, "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods/"+url.PathEscape(name), q, nil, nil)
	if err != nil && !isNotFound(err) {
		return err
	}
	return nil
}
