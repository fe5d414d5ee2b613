package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// CleanPods is `isobench clean` for Kubernetes: on the cluster the usual
// kubeconfig names (kubeconfig= option, $KUBECONFIG, ~/.kube/config, the
// local test cluster's; kubeconfig overrides), it removes the isobench
// pods this host made whose run is over, as dead says of their run token
// (dead(""): a pod without one), and writes one line per pod to w (like
// the rest of clean: "removed ...", "would remove ..." with dryRun, "kept
// ..."). With no kubeconfig, or an apiserver that does not answer within
// a few seconds, it does nothing and says nothing: there is no cluster.
func CleanPods(ctx context.Context, w io.Writer, kubeconfig string, dead func(token string) (bool, string), dryRun bool) error {
	p, err := NewPlatform(platform.Options{Extra: map[string]string{"kubeconfig": kubeconfig}}, platform.Env{})
	if err != nil || p.cfgErr != nil {
		return nil
	}
	defer p.c.http.CloseIdleConnections()
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = p.Version(vctx)
	cancel()
	if err != nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pods, err := p.listPods(lctx)
	if err != nil {
		return err
	}
	host := thisHost()
	var errs []error
	for _, pd := range pods {
		what := "k8s-pod " + pd.Namespace + "/" + pd.Name
		if pd.Host != host {
			if pd.Host == "" {
				fmt.Fprintf(w, "kept %s: it does not say which host's isobench made it\n", what)
			}
			continue // another host's, on a shared cluster
		}
		isDead, why := dead(pd.Token)
		if !isDead {
			if why != "" {
				fmt.Fprintf(w, "kept %s: %s\n", what, why)
			}
			continue
		}
		if dryRun {
			fmt.Fprintf(w, "would remove %s (%s)\n", what, why)
			continue
		}
		if err := p.deletePod(lctx, pd.Namespace, pd.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			continue
		}
		fmt.Fprintf(w, "removed %s (%s)\n", what, why)
	}
	return errors.Join(errs...)
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
