package guest

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Write(FrameStdout, 7, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteJSON(FrameExit, 7, Exit{Code: 3}); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFrame(&buf)
	if err != nil || f.Type != FrameStdout || f.Stream != 7 || string(f.Payload) != "abc" {
		t.Fatalf("first frame %+v %v", f, err)
	}
	f, err = ReadFrame(&buf)
	if err != nil || f.Type != FrameExit || string(f.Payload) != `{"code":3}` {
		t.Fatalf("second frame %+v %v", f, err)
	}
	if _, err := ReadFrame(&buf); err == nil {
		t.Error("read past the end")
	}
}

func TestFrameLimits(t *testing.T) {
	h := make([]byte, 9)
	h[0] = FrameData
	binary.BigEndian.PutUint32(h[5:], MaxPayload+1)
	if _, err := ReadFrame(bytes.NewReader(h)); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("oversized frame: %v", err)
	}
	binary.BigEndian.PutUint32(h[5:], 10)
	if _, err := ReadFrame(bytes.NewReader(append(h, 1, 2))); err == nil {
		t.Error("truncated frame accepted")
	}
	if err := NewWriter(&bytes.Buffer{}).Write(FrameData, 1, make([]byte, MaxPayload+1)); err == nil {
		t.Error("oversized write accepted")
	}
}

func TestQueueOrderAndAbort(t *testing.T) {
	var out bytes.Buffer
	q := NewQueue(&out, nil)
	for _, s := range []string{"a", "b", "c"} {
		q.Push([]byte(s))
	}
	q.Close()
	<-q.Done()
	if out.String() != "abc" || q.Err() != nil {
		t.Errorf("queue wrote %q, %v", out.String(), q.Err())
	}
	q = NewQueue(nil, nil)
	q.Abort()
	q.Push([]byte("x"))
	<-q.Done()
}

func TestMainArgs(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(t.Context(), []string{"probe"}, &out, &errb); code != 0 || strings.TrimSpace(out.String()) != ProbeOutput {
		t.Errorf("probe: %d %q", code, out.String())
	}
	if code := Main(t.Context(), []string{"bogus"}, &out, &errb); code != 2 {
		t.Errorf("bogus arg: %d", code)
	}
	// not pid 1 here: init refuses instead of powering off the host
	if os.Getpid() == 1 {
		return
	}
	errb.Reset()
	if code := Main(t.Context(), nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "pid 1") {
		t.Errorf("init outside a VM: %d %q", code, errb.String())
	}
}
