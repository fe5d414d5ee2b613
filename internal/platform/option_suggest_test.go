package platform

import (
	"strings"
	"testing"
)

// A mistyped platform option gets "did you mean" (issue 27, defect 10):
// docker:cpu=1 named the options but not cpus.
func TestUnknownOptionSuggests(t *testing.T) {
	_, err := ParseOptions("p:cpu=1", "image")
	if err == nil || !strings.Contains(err.Error(), `p has no option "cpu": did you mean cpus? (it has: cpus, image, memory, network, storage)`) {
		t.Fatalf("cpu: %v", err)
	}
	if _, err := ParseOptions("p:zzzzz=1", "image"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("zzzzz: %v", err)
	}
}
