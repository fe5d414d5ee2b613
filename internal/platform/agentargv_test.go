package platform

import (
	"strings"
	"testing"
)

// AgentArgv replaces only a leading placeholder and never changes the
// caller's slice.
func TestAgentArgv(t *testing.T) {
	in := []string{AgentPlaceholder, "agent", AgentPlaceholder}
	got := AgentArgv(in, "/a")
	if strings.Join(got, " ") != "/a agent "+AgentPlaceholder || in[0] != AgentPlaceholder {
		t.Fatalf("AgentArgv(%q) = %q", in, got)
	}
	if got := AgentArgv([]string{"sh", AgentPlaceholder}, "/a"); strings.Join(got, " ") != "sh "+AgentPlaceholder {
		t.Fatalf("a placeholder not first was replaced: %q", got)
	}
	if got := AgentArgv(nil, "/a"); len(got) != 0 {
		t.Fatalf("AgentArgv(nil) = %q", got)
	}
}
