package cli

import (
	"context"
	"strings"
	"testing"
)

// In 'isobench workloads' every parameter's default is set off from its
// description by at least two spaces, however long it is: a default as
// long as the column ran into the text ("default oltp_read_only sysbench
// test", "default fileserver FileBench personality").
func TestWorkloadsDefaultSetOff(t *testing.T) {
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"workloads"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, name := range st.Workloads.Names() {
		for _, p := range st.Workloads[name].Params {
			def, help := p.Describe()
			if !strings.Contains(out.String(), "default "+def+"  ") {
				t.Errorf("%s %s: default %q not followed by two spaces before %.40q", name, p.Name, def, help)
			}
		}
	}
}
