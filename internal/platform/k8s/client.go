package k8s

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultKubeconfig is where scripts/start-k8s.sh writes the admin
// kubeconfig of the single-node test cluster.
const DefaultKubeconfig = "/var/lib/isobench/k8s/admin.kubeconfig"

// kubeconfigPath picks the kubeconfig: the kubeconfig= option, the first
// existing file in $KUBECONFIG, ~/.kube/config, then DefaultKubeconfig.
func kubeconfigPath(opt, env, home string) (string, error) {
	if opt != "" {
		return opt, nil
	}
	for _, p := range filepath.SplitList(env) {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if home != "" {
		if p := filepath.Join(home, ".kube", "config"); fileExists(p) {
			return p, nil
		}
	}
	if fileExists(DefaultKubeconfig) {
		return DefaultKubeconfig, nil
	}
	return "", errors.New("k8s: no kubeconfig: set $KUBECONFIG, write ~/.kube/config, pass kubeconfig=PATH, or " + startHint())
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// kubeconfig is the part of a kubeconfig file used here.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			ClientCertificate     string `yaml:"client-certificate"`
			ClientCertificateData string `yaml:"client-certificate-data"`
			ClientKey             string `yaml:"client-key"`
			ClientKeyData         string `yaml:"client-key-data"`
			Token                 string `yaml:"token"`
			TokenFile             string `yaml:"tokenFile"`
		} `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster   string `yaml:"cluster"`
			User      string `yaml:"user"`
			Namespace string `yaml:"namespace"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

// endpoint is how to reach and authenticate to one apiserver.
type endpoint struct {
	Server    string
	Namespace string
	Token     string
	TLS       *tls.Config
}

// loadKubeconfig reads path and resolves its current context.
func loadKubeconfig(path string) (endpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return endpoint{}, fmt.Errorf("k8s: kubeconfig: %w", err)
	}
	return parseKubeconfig(b, filepath.Dir(path))
}

// parseKubeconfig resolves b's current context; relative file names are
// relative to dir.
func parseKubeconfig(b []byte, dir string) (endpoint, error) {
	var kc kubeconfig
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return endpoint{}, fmt.Errorf("k8s: kubeconfig: %w", err)
	}
	ctxName := kc.CurrentContext
	if ctxName == "" && len(kc.Contexts) == 1 {
		ctxName = kc.Contexts[0].Name
	}
	var clusterName, userName, ns string
	found := false
	for _, c := range kc.Contexts {
		if c.Name == ctxName {
			clusterName, userName, ns, found = c.Context.Cluster, c.Context.User, c.Context.Namespace, true
		}
	}
	if !found {
		return endpoint{}, fmt.Errorf("k8s: kubeconfig: context %q not found", ctxName)
	}
	ep := endpoint{Namespace: ns, TLS: &tls.Config{MinVersion: tls.VersionTLS12}}
	if ep.Namespace == "" {
		ep.Namespace = "default"
	}
	file := func(p string) string {
		if p != "" && !filepath.IsAbs(p) {
			return filepath.Join(dir, p)
		}
		return p
	}
	load := func(data, path string) ([]byte, error) {
		if data != "" {
			return base64.StdEncoding.DecodeString(data)
		}
		if path != "" {
			return os.ReadFile(file(path))
		}
		return nil, nil
	}
	found = false
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		found = true
		ep.Server = strings.TrimRight(c.Cluster.Server, "/")
		ca, err := load(c.Cluster.CertificateAuthorityData, c.Cluster.CertificateAuthority)
		if err != nil {
			return endpoint{}, fmt.Errorf("k8s: kubeconfig: cluster CA: %w", err)
		}
		if len(ca) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return endpoint{}, fmt.Errorf("k8s: kubeconfig: cluster %q: no PEM certificate in its CA", clusterName)
			}
			ep.TLS.RootCAs = pool
		}
		ep.TLS.InsecureSkipVerify = c.Cluster.InsecureSkipTLSVerify
	}
	if !found || ep.Server == "" {
		return endpoint{}, fmt.Errorf("k8s: kubeconfig: cluster %q not found or has no server", clusterName)
	}
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		cert, err := load(u.User.ClientCertificateData, u.User.ClientCertificate)
		if err != nil {
			return endpoint{}, fmt.Errorf("k8s: kubeconfig: client certificate: %w", err)
		}
		key, err := load(u.User.ClientKeyData, u.User.ClientKey)
		if err != nil {
			return endpoint{}, fmt.Errorf("k8s: kubeconfig: client key: %w", err)
		}
		if len(cert) > 0 {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				return endpoint{}, fmt.Errorf("k8s: kubeconfig: client certificate: %w", err)
			}
			ep.TLS.Certificates = []tls.Certificate{pair}
		}
		ep.Token = u.User.Token
		if ep.Token == "" && u.User.TokenFile != "" {
			t, err := os.ReadFile(file(u.User.TokenFile))
			if err != nil {
				return endpoint{}, fmt.Errorf("k8s: kubeconfig: token file: %w", err)
			}
			ep.Token = strings.TrimSpace(string(t))
		}
	}
	return ep, nil
}

// client speaks the Kubernetes REST API with the standard library.
type client struct {
	ep   endpoint
	http *http.Client
}

func newClient(ep endpoint) *client {
	tr := &http.Transport{TLSClientConfig: ep.TLS, MaxIdleConnsPerHost: 8, IdleConnTimeout: time.Minute}
	return &client{ep: ep, http: &http.Client{Transport: tr}}
}

// apiError is a non-2xx answer; Status is Kubernetes' status object.
type apiError struct {
	Code    int
	Reason  string
	Message string
}

func (e *apiError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Code)
	}
	return fmt.Sprintf("HTTP %d %s", e.Code, e.Reason)
}

func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == http.StatusNotFound
}

func (c *client) url(path string, q url.Values) string {
	u := c.ep.Server + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// stream sends a request and returns the body of a 2xx answer.
func (c *client) stream(ctx context.Context, method, path string, q url.Values, body any) (io.ReadCloser, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(path, q), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.ep.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.ep.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		ae := &apiError{Code: resp.StatusCode, Reason: resp.Status}
		var st struct{ Reason, Message string }
		if json.Unmarshal(b, &st) == nil && st.Message != "" {
			ae.Message = st.Message
		} else {
			ae.Message = strings.TrimSpace(string(b))
		}
		return nil, ae
	}
	return resp.Body, nil
}

// do sends a request and decodes the JSON answer into out (when not nil).
func (c *client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	rc, err := c.stream(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	defer rc.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, rc)
		return err
	}
	return json.NewDecoder(rc).Decode(out)
}
