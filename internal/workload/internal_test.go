package workload

import (
	"context"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/sample"
)

var hiddenDef = Def{
	Name:     "_hidden",
	Internal: true,
	Params: []Param{
		{Name: "bind", Kind: ListenIP, Default: "127.0.0.1"},
		{Name: "user", Kind: String, Default: ""},
		{Name: "password", Kind: String, Default: "", Secret: true},
		{Name: "pin", Kind: Int, Default: "0", Secret: true},
	},
	Agent: func(context.Context, Params, Barrier) ([]sample.Metric, error) { return nil, nil },
}

// TestInternalWorkloadsAreUnknownToUsers: an internal workload (a hidden
// half such as _transfer) is not found by Lookup, which every user input
// goes through (--workload, study files, stored plans), with the very
// error of a name never registered, and is not listed among the known
// ones; only the agent's LookupAgent finds it.
func TestInternalWorkloadsAreUnknownToUsers(t *testing.T) {
	r, err := NewRegistry(testDef, hiddenDef)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Lookup("_hidden")
	if err == nil {
		t.Fatal("Lookup found the internal workload _hidden")
	}
	_, never := r.Lookup("_never")
	if want := strings.Replace(never.Error(), "_never", "_hidden", 1); err.Error() != want {
		t.Errorf("Lookup(_hidden) = %q, want the error of an unknown name %q", err, want)
	}
	if strings.Contains(err.Error(), "known: _hidden") || strings.Contains(err.Error(), ", _hidden") {
		t.Errorf("the error lists the internal workload: %v", err)
	}
	if got := strings.Join(r.Names(), ","); got != "t" {
		t.Errorf("Names() = %s, want t only", got)
	}
	if d, err := r.LookupAgent("_hidden"); err != nil || d.Name != "_hidden" {
		t.Errorf("LookupAgent(_hidden) = %v, %v", d.Name, err)
	}
	if d, err := r.LookupAgent("t"); err != nil || d.Name != "t" {
		t.Errorf("LookupAgent(t) = %v, %v", d.Name, err)
	}
	if _, err := r.LookupAgent("zzz"); err == nil {
		t.Error("LookupAgent found an unregistered name")
	}
	// the convention is enforced: '_' names are internal, and only they
	for _, d := range []Def{
		{Name: "_leak", Agent: testDef.Agent},
		{Name: "visible", Internal: true, Agent: testDef.Agent},
	} {
		if _, err := NewRegistry(d); err == nil {
			t.Errorf("NewRegistry accepted %q with Internal=%v", d.Name, d.Internal)
		}
	}
}

// TestListenIP: a listen address is one IP literal; anything that could
// add to a configuration file (spaces, ';', quotes, newlines), names and
// the unspecified address are refused.
func TestListenIP(t *testing.T) {
	for _, ok := range []string{"127.0.0.1", "10.1.2.3", "fd00::1", "::1"} {
		if _, err := hiddenDef.Resolve(map[string]string{"bind": ok}); err != nil {
			t.Errorf("bind=%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "0.0.0.0", "::", "localhost", "127.0.0.1;", "127.0.0.1 80", "127.0.0.1\nListen 0.0.0.0:22",
		`"127.0.0.1"`, "127.0.0.1:80", " 127.0.0.1", "224.0.0.1", "10.0.0.1/8"} {
		_, err := hiddenDef.Resolve(map[string]string{"bind": bad})
		if err == nil {
			t.Errorf("bind=%q accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("bind=%q: error of more than one line: %q", bad, err)
		}
	}
}

// TestSecretsNeverInArgs: the agent's arguments may not carry a secret
// parameter, its standard input carries only secret ones, and neither
// the canonical form nor an error shows a secret's value.
func TestSecretsNeverInArgs(t *testing.T) {
	if _, err := hiddenDef.FromArgs("user=u,password=hunter2", nil); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a secret in the arguments: %v, want refused without its value", err)
	}
	if _, err := hiddenDef.FromArgs("", map[string]string{"bind": "10.0.0.1"}); err == nil {
		t.Error("a parameter that is not secret accepted on the standard input")
	}
	p, err := hiddenDef.FromArgs("user=u", map[string]string{"password": "hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Str("password") != "hunter2" || p.Str("user") != "u" {
		t.Errorf("resolved %v", p.Raw())
	}
	if s := p.String(); strings.Contains(s, "hunter2") || strings.Contains(s, "password") || !strings.Contains(s, "user=u") {
		t.Errorf("String() = %q: want the public parameters only", s)
	}
	_, err = hiddenDef.FromArgs("", map[string]string{"pin": "not-a-number-s3cret"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("an invalid secret: %v, want refused without its value", err)
	}
}
