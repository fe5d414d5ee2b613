package docker

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestDemux(t *testing.T) {
	var in bytes.Buffer
	in.Write(frame(streamStdout, "hello "))
	in.Write(frame(streamStderr, "oops\n"))
	in.Write(frame(streamStdout, "world\n"))
	in.Write(frame(streamStdout, ""))
	big := strings.Repeat("z", 100<<10) // larger than the copy buffer
	in.Write(frame(streamStderr, big))
	var out, errb bytes.Buffer
	// one byte at a time: frames split across reads must still parse
	if err := demux(iotest.OneByteReader(bytes.NewReader(in.Bytes())), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello world\n" {
		t.Errorf("stdout %q", out.String())
	}
	if errb.String() != "oops\n"+big {
		t.Errorf("stderr has %d bytes, want %d", errb.Len(), 5+len(big))
	}
}

func TestDemuxNilWriters(t *testing.T) {
	in := append(frame(streamStdout, "a"), frame(streamStderr, "b")...)
	if err := demux(bytes.NewReader(in), nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestDemuxTruncated(t *testing.T) {
	in := frame(streamStdout, "abcdef")
	for _, cut := range []int{3, 10} {
		var out bytes.Buffer
		err := demux(bytes.NewReader(in[:cut]), &out, nil)
		if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut at %d: err %v, want unexpected EOF", cut, err)
		}
	}
}

func TestDemuxSystemAndBadStream(t *testing.T) {
	err := demux(bytes.NewReader(frame(streamSystem, "exec failed")), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "exec failed") {
		t.Errorf("system frame: %v", err)
	}
	if err := demux(bytes.NewReader(frame(9, "x")), nil, nil); err == nil {
		t.Error("unknown stream accepted")
	}
	h := frame(streamStdout, "")
	binary.BigEndian.PutUint32(h[4:], 1<<31)
	if err := demux(bytes.NewReader(h), nil, nil); err == nil {
		t.Error("huge frame accepted")
	}
}

func TestProgressError(t *testing.T) {
	ok := `{"status":"Importing"}` + "\n" + `{"status":"sha256:abc"}` + "\n"
	if err := progressError([]byte(ok)); err != nil {
		t.Errorf("clean stream: %v", err)
	}
	bad := ok + `{"errorDetail":{"message":"disk full"},"error":"disk full"}` + "\n"
	if err := progressError([]byte(bad)); err == nil || err.Error() != "disk full" {
		t.Errorf("error stream: %v", err)
	}
}

func TestOneFileTar(t *testing.T) {
	var b bytes.Buffer
	mt := time.Unix(1700000000, 0)
	if err := writeOneFileTar(&b, "tmp/a/b.txt", 0o750, 5, mt, strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&b)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "tmp/a/b.txt" || h.Mode != 0o750 || h.Size != 5 || h.Uid != 0 || !h.ModTime.Equal(mt) {
		t.Errorf("header %+v", h)
	}
	data, _ := io.ReadAll(tr)
	if string(data) != "hello" {
		t.Errorf("content %q", data)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("more than one entry: %v", err)
	}
	// a file that shrank while copying is an error, not a short tar
	if err := writeOneFileTar(io.Discard, "x", 0o644, 10, mt, strings.NewReader("short")); err == nil {
		t.Error("short source accepted")
	}
}
