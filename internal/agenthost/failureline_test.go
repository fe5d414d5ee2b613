package agenthost

import (
	"strings"
	"testing"
)

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

// TestLimitedBufferKeepsTheStart: a crash's stack trace longer than the
// buffer still leaves its first line, the runtime's, for failureLine.
func TestLimitedBufferKeepsTheStart(t *testing.T) {
	b := &limitedBuffer{max: 64}
	b.Write([]byte("fatal error: runtime: out of memory\n\nruntime stack:\n"))
	for i := 0; i < 100; i++ {
		b.Write([]byte("\tgithub.com/isobench/isobench/internal/agent/heartbeat.go:17 +0x10d\n"))
	}
	if got := failureLine(strings.TrimSpace(b.String())); got != "fatal error: runtime: out of memory" {
		t.Errorf("failureLine = %q", got)
	}
	small := &limitedBuffer{max: 64}
	small.Write([]byte("one\ntwo"))
	if small.String() != "one\ntwo" {
		t.Errorf("short stderr: %q", small.String())
	}
}
