package fsbench

import (
	"github.com/isobench/isobench/internal/hist"

	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"time"
)

// opKind is a FileBench flowop type.
type opKind int

const (
	opCreateFile opKind = iota
	opOpenFile
	opCloseFile
	opWriteWholeFile
	opAppendFileRand
	opReadWholeFile
	opDeleteFile
	opStatFile
	opFsync
	numOps
)

var opNames = [numOps]string{
	"createfile", "openfile", "closefile", "writewholefile", "appendfilerand",
	"readwholefile", "deletefile", "statfile", "fsync",
}

func (k opKind) String() string { return opNames[k] }

// flowop is one line of a personality's thread definition.
type flowop struct {
	kind    opKind
	set     int // fileset index, for ops that pick a file
	fd      int // descriptor slot 1..3
	indexed bool
	// iosize gives the I/O size of one execution (read chunk for
	// readwholefile and writewholefile, upper bound of the append size for
	// appendfilerand).
	iosize func(*thread) int64
}

const maxFD = 4

type openFile struct {
	fd  int
	e   *entry
	set int
}

// threadStats is what one thread measured.
type threadStats struct {
	hist         [numOps]*hist.Histogram
	rbytes       int64
	wbytes       int64
	pickFailures int64
	loops        int64
	late         int64 // ops completed after the deadline, not counted
}

func (s *threadStats) record(k opKind, d time.Duration) {
	if s.hist[k] == nil {
		s.hist[k] = &hist.Histogram{}
	}
	s.hist[k].Record(d)
}

// done accounts one flowop that ran from t0 to end and moved rbytes and
// wbytes. Like FileBench, whose statistics are a snapshot taken when the
// run time is up, an op that completes after the deadline is not counted.
func (t *thread) done(k opKind, t0, end time.Time, rbytes, wbytes int64) {
	if end.After(t.deadline) {
		t.stats.late++
		return
	}
	t.stats.record(k, end.Sub(t0))
	t.stats.rbytes += rbytes
	t.stats.wbytes += wbytes
}

// thread is one FileBench worker thread (a goroutine here).
type thread struct {
	id    int
	r     *rand.Rand
	sets  []*Fileset
	flow  []flowop
	fds   [maxFD]*openFile
	rbuf  []byte
	wbuf  []byte // shared, read-only
	idx   func(*thread, *Fileset) int
	stats threadStats
	// deadline is the end of the timed run.
	deadline time.Time
}

// errFlow wraps an I/O error that must stop the run (FILEBENCH_ERROR).
type errFlow struct {
	op  opKind
	err error
}

func (e *errFlow) Error() string { return fmt.Sprintf("flowop %s: %v", e.op, e.err) }
func (e *errFlow) Unwrap() error { return e.err }

// run executes the thread's flow again and again until deadline or ctx is
// done. A pick that finds no suitable file (FileBench would stop the whole
// run there) closes this thread's files, counts a pick failure, pauses 1 ms
// and starts the flow over.
func (t *thread) run(ctx context.Context) error {
	deadline := t.deadline
	defer t.closeAll()
loop:
	for {
		for i := range t.flow {
			if ctx.Err() != nil || !time.Now().Before(deadline) {
				return nil
			}
			err := t.exec(&t.flow[i])
			if errors.Is(err, errNoFile) {
				t.stats.pickFailures++
				t.closeAll()
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(time.Millisecond):
				}
				continue loop
			}
			if err != nil {
				return err
			}
		}
		t.stats.loops++
	}
}

func (t *thread) closeAll() {
	for i, of := range t.fds {
		if of != nil {
			_ = syscall.Close(of.fd)
			t.sets[of.set].closed(of.e)
			t.fds[i] = nil
		}
	}
}

func (t *thread) exec(op *flowop) error {
	switch op.kind {
	case opCreateFile:
		return t.createFile(op)
	case opOpenFile:
		return t.openFile(op)
	case opCloseFile:
		return t.closeFile(op)
	case opWriteWholeFile:
		return t.writeWholeFile(op)
	case opAppendFileRand:
		return t.appendFileRand(op)
	case opReadWholeFile:
		return t.readWholeFile(op)
	case opDeleteFile:
		return t.deleteFile(op)
	case opStatFile:
		return t.statFile(op)
	case opFsync:
		return t.fsync(op)
	}
	return fmt.Errorf("unknown flowop %d", op.kind)
}

func (t *thread) openFlags(fs *Fileset) int {
	if fs.readonly {
		return syscall.O_RDONLY | syscall.O_CLOEXEC
	}
	return syscall.O_RDWR | syscall.O_CLOEXEC
}

func (t *thread) createFile(op *flowop) error {
	if t.fds[op.fd] != nil {
		return &errFlow{op.kind, fmt.Errorf("fd %d already open", op.fd)}
	}
	fs := t.sets[op.set]
	e, err := fs.pick(false, -1)
	if err != nil {
		return err
	}
	t0 := time.Now()
	fd, err := openRetry(e.path, t.openFlags(fs)|syscall.O_CREAT, 0o666)
	end := time.Now()
	if err != nil {
		fs.unbusy(e, nil, 0)
		return &errFlow{op.kind, fmt.Errorf("%s: %w", e.path, err)}
	}
	t.done(op.kind, t0, end, 0, 0)
	yes := true
	fs.unbusy(e, &yes, 1)
	t.fds[op.fd] = &openFile{fd: fd, e: e, set: op.set}
	return nil
}

func (t *thread) openFile(op *flowop) error {
	if t.fds[op.fd] != nil {
		return &errFlow{op.kind, fmt.Errorf("fd %d already open", op.fd)}
	}
	return t.openInto(op, op.kind)
}

// openInto picks an existing file of op's fileset and opens it into op.fd;
// the open is timed as kind.
func (t *thread) openInto(op *flowop, kind opKind) error {
	fs := t.sets[op.set]
	index := -1
	if op.indexed {
		index = t.idx(t, fs)
	}
	e, err := fs.pick(true, index)
	if err != nil {
		return err
	}
	t0 := time.Now()
	fd, err := openRetry(e.path, t.openFlags(fs), 0o666)
	end := time.Now()
	if err != nil {
		fs.unbusy(e, nil, 0)
		return &errFlow{kind, fmt.Errorf("%s: %w", e.path, err)}
	}
	t.done(kind, t0, end, 0, 0)
	fs.unbusy(e, nil, 1)
	t.fds[op.fd] = &openFile{fd: fd, e: e, set: op.set}
	return nil
}

func (t *thread) closeFile(op *flowop) error {
	of := t.fds[op.fd]
	if of == nil {
		return &errFlow{op.kind, fmt.Errorf("fd %d is not open", op.fd)}
	}
	t0 := time.Now()
	err := syscall.Close(of.fd)
	end := time.Now()
	t.sets[of.set].closed(of.e)
	t.fds[op.fd] = nil
	if err != nil {
		return &errFlow{op.kind, err}
	}
	t.done(op.kind, t0, end, 0, 0)
	return nil
}

// writeWholeFile writes the file's fileset size (fse_size) in iosize
// chunks at the current offset, as writewholefile with srcfd=fd.
func (t *thread) writeWholeFile(op *flowop) error {
	of := t.fds[op.fd]
	if of == nil {
		return &errFlow{op.kind, fmt.Errorf("fd %d is not open", op.fd)}
	}
	iosize := op.iosize(t)
	if iosize <= 0 {
		iosize = of.e.size
	}
	t0 := time.Now()
	var written int64
	for written < of.e.size {
		n := min(of.e.size-written, iosize)
		if err := t.writeN(of.fd, n); err != nil {
			return &errFlow{op.kind, err}
		}
		written += n
	}
	t.done(op.kind, t0, time.Now(), 0, written)
	return nil
}

// writeN writes n bytes from the shared pattern buffer.
func (t *thread) writeN(fd int, n int64) error {
	for n > 0 {
		c := min(n, int64(len(t.wbuf)))
		if err := writeFull(fd, t.wbuf[:c]); err != nil {
			return err
		}
		n -= c
	}
	return nil
}

// appendFileRand appends a uniform random number of bytes in [0, iosize)
// at the end of the file; a zero draw is counted as an op without I/O, as
// FileBench does. If the descriptor is not open yet (webserver's log file),
// it first opens an existing file of op's fileset and keeps it open.
func (t *thread) appendFileRand(op *flowop) error {
	iosize := op.iosize(t)
	if iosize <= 0 {
		return &errFlow{op.kind, errors.New("zero iosize")}
	}
	n := uniformBelow(t.r, iosize)
	if n == 0 {
		now := time.Now()
		t.done(op.kind, now, now, 0, 0)
		return nil
	}
	of := t.fds[op.fd]
	if of == nil {
		if err := t.openInto(op, opOpenFile); err != nil {
			return err
		}
		of = t.fds[op.fd]
	}
	t0 := time.Now()
	if _, err := syscall.Seek(of.fd, 0, io.SeekEnd); err != nil {
		return &errFlow{op.kind, err}
	}
	if err := t.writeN(of.fd, n); err != nil {
		return &errFlow{op.kind, err}
	}
	t.done(op.kind, t0, time.Now(), 0, n)
	return nil
}

// readWholeFile seeks to 0 and reads in iosize chunks until end of file.
func (t *thread) readWholeFile(op *flowop) error {
	of := t.fds[op.fd]
	if of == nil {
		return &errFlow{op.kind, fmt.Errorf("fd %d is not open", op.fd)}
	}
	iosize := op.iosize(t)
	if iosize <= 0 {
		iosize = max(of.e.size, 1)
	}
	if int64(len(t.rbuf)) < iosize {
		t.rbuf = make([]byte, iosize)
	}
	buf := t.rbuf[:iosize]
	t0 := time.Now()
	if _, err := syscall.Seek(of.fd, 0, io.SeekStart); err != nil {
		return &errFlow{op.kind, err}
	}
	var total int64
	for {
		n, err := syscall.Read(of.fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &errFlow{op.kind, err}
		}
		if n <= 0 {
			break
		}
		total += int64(n)
	}
	t.done(op.kind, t0, time.Now(), total, 0)
	return nil
}

// deleteFile unlinks an existing file that nobody has open; a picked file
// that is open elsewhere is left alone without counting an op.
func (t *thread) deleteFile(op *flowop) error {
	fs := t.sets[op.set]
	e, err := fs.pick(true, -1)
	if err != nil {
		return err
	}
	fs.mu.Lock()
	open := e.openCnt > 0
	fs.mu.Unlock()
	if open {
		fs.unbusy(e, nil, 0)
		return nil
	}
	t0 := time.Now()
	err = syscall.Unlink(e.path)
	end := time.Now()
	if err != nil {
		fs.unbusy(e, nil, 0)
		return &errFlow{op.kind, fmt.Errorf("%s: %w", e.path, err)}
	}
	t.done(op.kind, t0, end, 0, 0)
	no := false
	fs.unbusy(e, &no, 0)
	return nil
}

func (t *thread) statFile(op *flowop) error {
	fs := t.sets[op.set]
	e, err := fs.pick(true, -1)
	if err != nil {
		return err
	}
	var st syscall.Stat_t
	t0 := time.Now()
	err = syscall.Stat(e.path, &st)
	end := time.Now()
	fs.unbusy(e, nil, 0)
	if err != nil {
		return &errFlow{op.kind, fmt.Errorf("%s: %w", e.path, err)}
	}
	t.done(op.kind, t0, end, 0, 0)
	return nil
}

func (t *thread) fsync(op *flowop) error {
	of := t.fds[op.fd]
	if of == nil {
		return &errFlow{op.kind, fmt.Errorf("fd %d is not open", op.fd)}
	}
	t0 := time.Now()
	err := syscall.Fsync(of.fd)
	end := time.Now()
	if err != nil {
		return &errFlow{op.kind, err}
	}
	t.done(op.kind, t0, end, 0, 0)
	return nil
}
