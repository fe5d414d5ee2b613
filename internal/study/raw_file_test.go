package study

import (
	"strings"
	"testing"
)

// 'study run ./s.yaml' names a file, not a built-in study: the error says
// how a study file runs and is previewed (issue 27, defect 4: an edited
// study seemed impossible to preview).
func TestRawPointsAFileToRun(t *testing.T) {
	for _, id := range []string{"./s.yaml", "s004.yml", "dir/s"} {
		_, err := Raw(id)
		if err == nil || !strings.Contains(err.Error(), "isobench run "+id+" --dry-run") {
			t.Errorf("Raw(%q): %v", id, err)
		}
	}
	if _, err := Raw("009"); err == nil || strings.Contains(err.Error(), "isobench run") {
		t.Errorf("Raw(009): %v", err)
	}
}
