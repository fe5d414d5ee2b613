package agenthost

import "testing"

// TestFailureLine: a crashed agent's error says what the Go runtime said,
// not the last frame of its stack trace; other stderr gives its last line.
func TestFailureLine(t *testing.T) {
	crash := "fatal error: runtime: out of memory\n\nruntime stack:\nruntime.throw(...)\n\t/usr/local/go/src/runtime/panic.go:1101 +0x48\n\tgithub.com/isobench/isobench/internal/agent/heartbeat.go:17 +0x10d"
	for in, want := range map[string]string{
		crash: "fatal error: runtime: out of memory",
		"panic: boom\n\ngoroutine 1:\nmain.main()": "panic: boom",
		"starting\nno such file":                   "no such file",
	} {
		if got := failureLine(in); got != want {
			t.Errorf("failureLine(%q) = %q, want %q", in, got, want)
		}
	}
}
