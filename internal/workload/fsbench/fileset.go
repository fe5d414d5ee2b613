package fsbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// errNoFile is FileBench's FILEBENCH_NORSC: no idle file in the wanted
// state (existing or not) could be picked.
var errNoFile = errors.New("no suitable file in the fileset")

// entry is one file of a fileset (FileBench's filesetentry_t).
type entry struct {
	index   int
	path    string // absolute
	size    int64  // fse_size, fixed when the fileset is populated
	exists  bool
	busy    bool
	openCnt int
}

// Fileset is a tree of directories and files built as FileBench's
// fileset_populate does, plus the pick state (rotors, busy and exists flags)
// its flowops use.
type Fileset struct {
	Name     string
	Root     string   // <dir>/<name>
	Dirs     []string // every directory, parents before children, Root first
	readonly bool
	prealloc int // percent of files created before the run

	mu       sync.Mutex
	idleCond *sync.Cond // signalled when a busy entry is released
	busy     int        // entries currently busy
	files    []*entry
	neRotor  int // next index to try for a file that does not exist
	exRotor  int // next index to try for a file that exists
	Bytes    int64
	maxDepth int
}

// SizeFunc draws the size of one file.
type SizeFunc func(r *rand.Rand) int64

// PopulateFileset builds the tree of a fileset of nfiles files under
// dir/name: the mean depth is ln(nfiles)/ln(meanwidth), every directory
// draws its own depth limit and width from gamma distributions (shape 1.5)
// around those means, directories at or below their depth limit hold files,
// others hold subdirectories, and the root keeps adding subdirectories until
// all files have a place. Names are FileBench's %08d serials. Nothing is
// created on disk.
func PopulateFileset(r *rand.Rand, dir, name string, nfiles, meanwidth int, size SizeFunc) (*Fileset, error) {
	if nfiles < 1 {
		return nil, fmt.Errorf("fileset %s: need at least one file, got %d", name, nfiles)
	}
	if meanwidth < 2 {
		return nil, fmt.Errorf("fileset %s: mean directory width must be at least 2, got %d", name, meanwidth)
	}
	fs := &Fileset{Name: name, Root: filepath.Join(dir, name)}
	fs.idleCond = sync.NewCond(&fs.mu)
	b := builder{
		r: r, fs: fs, nfiles: nfiles, size: size,
		meanWidth: float64(meanwidth),
		meanDepth: math.Log(float64(nfiles)) / math.Log(float64(meanwidth)),
	}
	b.subdir(fs.Root, true, 0)
	return fs, nil
}

type builder struct {
	r         *rand.Rand
	fs        *Fileset
	nfiles    int
	size      SizeFunc
	meanWidth float64
	meanDepth float64
}

func (b *builder) subdir(path string, root bool, depth int) {
	depth++
	if depth > b.fs.maxDepth {
		b.fs.maxDepth = depth
	}
	b.fs.Dirs = append(b.fs.Dirs, path)
	randepth := math.Trunc(Gamma(b.r, DefaultGamma, b.meanDepth/DefaultGamma))
	ranwidth := Gamma(b.r, DefaultGamma, b.meanWidth/DefaultGamma)
	if randepth == 0 {
		randepth = 1
	}
	if ranwidth == 0 {
		ranwidth = 1
	}
	leaf := float64(depth) >= randepth
	for i := 1; (root || float64(i) < ranwidth+1) && len(b.fs.files) < b.nfiles; i++ {
		child := filepath.Join(path, fmt.Sprintf("%08d", i))
		if !root && leaf {
			sz := b.size(b.r)
			if sz < 0 {
				sz = 0
			}
			b.fs.files = append(b.fs.files, &entry{index: len(b.fs.files), path: child, size: sz})
			b.fs.Bytes += sz
		} else {
			b.subdir(child, false, depth)
		}
	}
}

// NumFiles is the number of file entries.
func (fs *Fileset) NumFiles() int { return len(fs.files) }

// FilesPerDir counts file entries by parent directory.
func (fs *Fileset) FilesPerDir() map[string]int {
	m := map[string]int{}
	for _, e := range fs.files {
		m[filepath.Dir(e.path)]++
	}
	return m
}

// Create makes the directory tree and preallocates prealloc percent of the
// files (each file independently, in random order, as FileBench does),
// writing each in blocks of up to 1 MiB from buf. It is the untimed setup.
func (fs *Fileset) Create(ctx context.Context, r *rand.Rand, prealloc int, buf []byte) error {
	fs.prealloc = prealloc
	for _, d := range fs.Dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("fileset %s: %w", fs.Name, err)
		}
	}
	order := r.Perm(len(fs.files))
	for _, i := range order {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := fs.files[i]
		if r.IntN(100) >= prealloc {
			continue
		}
		if err := preallocFile(e.path, e.size, buf); err != nil {
			return fmt.Errorf("fileset %s: preallocate: %w", fs.Name, err)
		}
		e.exists = true
	}
	return nil
}

const allocBlock = 1 << 20 // FileBench's FILE_ALLOC_BLOCK

func preallocFile(path string, size int64, buf []byte) error {
	fd, err := openRetry(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	block := int64(allocBlock)
	if int64(len(buf)) < block {
		block = int64(len(buf))
	}
	var werr error
	for left := size; left > 0 && werr == nil; {
		n := min(left, block)
		werr = writeFull(fd, buf[:n])
		left -= n
	}
	cerr := syscall.Close(fd)
	if werr != nil {
		return &os.PathError{Op: "write", Path: path, Err: werr}
	}
	if cerr != nil {
		return &os.PathError{Op: "close", Path: path, Err: cerr}
	}
	return nil
}

// Existing counts the files that currently exist.
func (fs *Fileset) Existing() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := 0
	for _, e := range fs.files {
		if e.exists {
			n++
		}
	}
	return n
}

// pick selects an idle file that exists (exists=true) or does not, marks
// it busy and returns it. With index < 0 it goes round-robin (FileBench's
// per-fileset rotors; threads share one rotor since the personalities do
// not rotate fds); otherwise it starts at the first entry at or after
// index. Busy entries are skipped. As in FileBench, a pick waits while
// every file of the set is busy; errNoFile when idle files exist but none in
// the wanted state.
func (fs *Fileset) pick(exists bool, index int) (*entry, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := len(fs.files)
	for fs.busy >= n {
		fs.idleCond.Wait()
	}
	start := index
	if index < 0 {
		start = fs.exRotor
		if !exists {
			start = fs.neRotor
		}
	}
	first := -1
	for k := 0; k < n; k++ {
		e := fs.files[(start+k)%n]
		if e.exists != exists {
			continue
		}
		if first < 0 {
			first = e.index
		}
		if e.busy {
			continue
		}
		if index < 0 {
			if exists {
				fs.exRotor = first + 1
			} else {
				fs.neRotor = first + 1
			}
		}
		e.busy = true
		fs.busy++
		return e, nil
	}
	return nil, errNoFile
}

// unbusy releases a picked entry; openDelta adjusts its open count and
// exists (when non-nil) sets whether the file now exists.
func (fs *Fileset) unbusy(e *entry, exists *bool, openDelta int) {
	fs.mu.Lock()
	if e.busy {
		e.busy = false
		fs.busy--
		fs.idleCond.Signal()
	}
	e.openCnt += openDelta
	if exists != nil {
		e.exists = *exists
	}
	fs.mu.Unlock()
}

// closed records that one open of e was closed.
func (fs *Fileset) closed(e *entry) {
	fs.mu.Lock()
	e.openCnt--
	fs.mu.Unlock()
}

// openRetry is open(2), retried on EINTR.
func openRetry(path string, flags int, mode uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flags, mode)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// writeFull writes all of b, retrying short writes and EINTR.
func writeFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return syscall.EIO
		}
		b = b[n:]
	}
	return nil
}
