package cli

import (
	"context"
	"strings"
	"testing"
)

// Mistakes get "did you mean" (issue 27, defect 10): a workload parameter
// (cpu:thread=2), a platform option (docker:cpu=1), and a platform given
// as a workload (dokcer, docker).
func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--platform", "native", "--workload", "cpu:thread=2"}, `did you mean threads?`},
		{[]string{"--platform", "docker:cpu=1", "--workload", "cpu"}, `did you mean cpus?`},
		{[]string{"--platform", "native", "--workload", "dokcer"}, `unknown workload "dokcer": docker is a platform: --platform docker`},
		{[]string{"--platform", "native", "--workload", "docker"}, `unknown workload "docker": docker is a platform: --platform docker`},
		{[]string{"--platform", "native", "--workload", "cpuu"}, `unknown workload "cpuu": did you mean cpu?`},
	} {
		st, out, errb := newTestState(t)
		code := Main(context.Background(), st, append(append([]string{"run"}, c.args...), "--dry-run"))
		oneUsageLine(t, code, errb.String())
		if !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
			t.Errorf("%v: stderr %q, want %q", c.args, errb.String(), c.want)
		}
	}
}
