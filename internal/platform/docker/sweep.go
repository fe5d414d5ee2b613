package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/platform"
)

// Sweep lists what docker instances may leave on this host
// (platform.Factory.Sweep): the daemon's containers labelled isobench
// (every one isobench creates, on any platform that runs Docker
// containers on this host), with the run token of their isobench.run
// label (or their isobench.name label, which holds it). No daemon socket:
// nothing.
func Sweep(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
	sock, err := socketPath(os.Getenv("DOCKER_HOST"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(sock); err != nil {
		return nil, nil // no Docker here
	}
	c := newClient(sock)
	filters, _ := json.Marshal(map[string][]string{"label": {platform.Label}})
	q := url.Values{}
	q.Set("all", "1")
	q.Set("filters", string(filters))
	var cs []struct {
		ID     string `json:"Id"`
		Names  []string
		Labels map[string]string
	}
	if err := c.do(ctx, http.MethodGet, "/containers/json", q, nil, &cs); err != nil {
		return nil, fmt.Errorf("docker: list containers: %w", err)
	}
	var out []platform.Leftover
	for _, ct := range cs {
		if ct.ID == "" {
			continue
		}
		name := ct.ID
		if len(ct.Names) > 0 {
			name = strings.TrimPrefix(ct.Names[0], "/")
		}
		id := ct.ID
		out = append(out, platform.Leftover{Kind: "docker-container", Name: name,
			Token: ct.Labels["isobench.run"], SpecName: ct.Labels[platform.Label+".name"],
			Remove: func(ctx context.Context) error { return removeContainer(ctx, c, id) }})
	}
	return out, nil
}

// removeContainer removes container id with its anonymous volumes; one
// already gone is no error, and one another sweep is already removing is
// waited for (up to a minute).
func removeContainer(ctx context.Context, c *client, id string) error {
	q := url.Values{}
	q.Set("force", "1")
	q.Set("v", "1")
	err := c.do(ctx, http.MethodDelete, "/containers/"+id, q, nil, nil)
	var ae *apiError
	switch {
	case err == nil, isNotFound(err):
		return nil
	case !errors.As(err, &ae) || !strings.Contains(strings.ToLower(ae.Message), "already in progress"):
		return fmt.Errorf("docker: remove %s: %w", id, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		err := c.do(ctx, http.MethodGet, "/containers/"+id+"/json", nil, nil, nil)
		if isNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: container %s still being removed by another process: %w", id, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
