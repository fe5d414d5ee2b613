// Package dataset makes the data sets the transfer workloads move (study
// 002: one ~450 MB file, and a tree of ~2,500 files and folders holding
// ~75 MB of text and binary files of diversified sizes): seeded and
// deterministic, so the receiving side knows what every file must hold
// without being told, and a transfer that loses or corrupts a byte is
// caught by Verify.
//
// A data set is "file/SIZE" (one file) or "tree/NODES/SIZE" (NODES files
// and folders together, SIZE bytes in the files). Its manifest lists every
// folder and every file with its size and SHA-256; Generate writes it under
// a directory, Verify checks a directory against it.
package dataset

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/isobench/isobench/internal/spec"
)

// Kinds of data set.
const (
	File = "file"
	Tree = "tree"
)

// MaxSize bounds a data set's bytes (64 GiB).
const MaxSize = 64 << 30

// MaxNodes bounds a tree's files and folders.
const MaxNodes = 1_000_000

// Spec is a data set's shape.
type Spec struct {
	Kind  string // File or Tree
	Nodes int    // Tree: files and folders together
	Size  int64  // bytes in the files
	Seed  uint64
}

// Parse reads "file/SIZE" or "tree/NODES/SIZE" (SIZE like 450m, 75m).
func Parse(s string, seed uint64) (Spec, error) {
	parts := strings.Split(s, "/")
	bad := func(why string) (Spec, error) {
		return Spec{}, fmt.Errorf("data set %q: %s (want file/SIZE or tree/NODES/SIZE, e.g. file/450m or tree/2500/75m)", s, why)
	}
	switch parts[0] {
	case File:
		if len(parts) != 2 {
			return bad("file takes one size")
		}
		n, err := spec.ParseSize(parts[1])
		if err != nil || n < 1 || n > MaxSize {
			return bad(fmt.Sprintf("size %q is not 1 byte..64g", parts[1]))
		}
		return Spec{Kind: File, Nodes: 1, Size: n, Seed: seed}, nil
	case Tree:
		if len(parts) != 3 {
			return bad("tree takes a node count and a size")
		}
		nodes, err := strconv.Atoi(parts[1])
		if err != nil || nodes < 2 || nodes > MaxNodes {
			return bad(fmt.Sprintf("node count %q is not 2..%d", parts[1], MaxNodes))
		}
		n, err := spec.ParseSize(parts[2])
		if err != nil || n < 1 || n > MaxSize {
			return bad(fmt.Sprintf("size %q is not 1 byte..64g", parts[2]))
		}
		return Spec{Kind: Tree, Nodes: nodes, Size: n, Seed: seed}, nil
	}
	return bad("unknown kind")
}

// String renders the spec as Parse reads it (without the seed).
func (s Spec) String() string {
	if s.Kind == File {
		return File + "/" + strconv.FormatInt(s.Size, 10)
	}
	return Tree + "/" + strconv.Itoa(s.Nodes) + "/" + strconv.FormatInt(s.Size, 10)
}

// Entry is one folder or file of a data set; Path is slash-separated and
// relative to the data set's root.
type Entry struct {
	Path   string
	Dir    bool
	Size   int64
	Text   bool   // text (lines of words) rather than binary
	SHA256 string // hex; files only, filled by Manifest
}

// Files returns the number of files and their bytes.
func (s Spec) layout() []Entry {
	if s.Kind == File {
		return []Entry{{Path: "data.bin", Size: s.Size}}
	}
	r := rand.New(rand.NewPCG(s.Seed, 0x7472656500000000))
	// one folder in ten, at most 20 entries per folder level
	dirs := max(1, s.Nodes/10)
	files := s.Nodes - dirs
	if files < 1 {
		files, dirs = 1, s.Nodes-1
	}
	var out []Entry
	dirPaths := []string{""}
	for i := 0; i < dirs; i++ {
		// a new folder under an existing one (a root-heavy, bushy tree)
		parent := dirPaths[r.IntN(len(dirPaths))]
		if strings.Count(parent, "/") >= 5 {
			parent = ""
		}
		p := fmt.Sprintf("d%04d", i)
		if parent != "" {
			p = parent + "/" + p
		}
		dirPaths = append(dirPaths, p)
		out = append(out, Entry{Path: p, Dir: true})
	}
	// sizes log-uniform over 512 B..4 MiB (diversified, many small and a
	// few large files), then scaled to the total
	w := make([]float64, files)
	var sum float64
	for i := range w {
		w[i] = math.Exp(math.Log(512) + r.Float64()*(math.Log(4<<20)-math.Log(512)))
		sum += w[i]
	}
	var given int64
	for i := 0; i < files; i++ {
		sz := int64(w[i] / sum * float64(s.Size))
		if i == files-1 {
			sz = s.Size - given
		}
		given += sz
		parent := dirPaths[r.IntN(len(dirPaths))]
		text := r.IntN(2) == 0
		ext := ".bin"
		if text {
			ext = ".txt"
		}
		p := fmt.Sprintf("f%05d%s", i, ext)
		if parent != "" {
			p = parent + "/" + p
		}
		out = append(out, Entry{Path: p, Size: sz, Text: text})
	}
	return out
}

// content returns the bytes of file e, deterministic in the seed and path.
func (s Spec) content(e Entry) io.Reader {
	h := fnv.New64a()
	h.Write([]byte(e.Path))
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[0:], s.Seed)
	binary.LittleEndian.PutUint64(seed[8:], h.Sum64())
	binary.LittleEndian.PutUint64(seed[16:], uint64(e.Size))
	return io.LimitReader(&stream{c: rand.NewChaCha8(seed), text: e.Text}, e.Size)
}

type stream struct {
	c    *rand.ChaCha8
	text bool
}

// letters makes text files: lower-case words, spaces and newlines.
const letters = "etaoinshrdlucmfwypvbgkqjxz      eeetttaaaooo\n"

func (s *stream) Read(p []byte) (int, error) {
	s.c.Read(p)
	if s.text {
		for i, b := range p {
			p[i] = letters[int(b)%len(letters)]
		}
	}
	return len(p), nil
}

var cache sync.Map // Spec -> []Entry with sums

// Manifest returns every entry with the SHA-256 of each file, computed
// once per process and data set.
func (s Spec) Manifest() []Entry {
	if m, ok := cache.Load(s); ok {
		return m.([]Entry)
	}
	es := s.layout()
	for i := range es {
		if es[i].Dir {
			continue
		}
		h := sha256.New()
		io.CopyBuffer(h, s.content(es[i]), make([]byte, 1<<20))
		es[i].SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	cache.Store(s, es)
	return es
}

// Files returns the files of the data set (no folders), without sums.
func (s Spec) Files() []Entry {
	var out []Entry
	for _, e := range s.layout() {
		if !e.Dir {
			out = append(out, e)
		}
	}
	return out
}

// Dirs returns the folders, parents before children.
func (s Spec) Dirs() []Entry {
	var out []Entry
	for _, e := range s.layout() {
		if e.Dir {
			out = append(out, e)
		}
	}
	return out
}

// Generate writes the data set under dir (created if needed).
func (s Spec) Generate(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	buf := make([]byte, 1<<20)
	for _, e := range s.layout() {
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		if e.Dir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("dataset: %w", err)
			}
			continue
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
		_, err = io.CopyBuffer(f, s.content(e), buf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("dataset: writing %s: %w", p, err)
		}
	}
	return nil
}

// ErrMismatch marks a received data set that differs from its manifest.
var ErrMismatch = errors.New("the received data differ from what was sent")

// Verify checks that dir holds every folder and file of the data set with
// the right sizes and SHA-256 sums. Extra files are an error too. It
// returns the bytes checked.
func (s Spec) Verify(dir string) (int64, error) {
	want := s.Manifest()
	var problems []string
	var bytes int64
	seen := map[string]bool{}
	buf := make([]byte, 1<<20)
	for _, e := range want {
		seen[e.Path] = true
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		st, err := os.Stat(p)
		switch {
		case err != nil:
			problems = append(problems, e.Path+": missing")
			continue
		case e.Dir && !st.IsDir():
			problems = append(problems, e.Path+": not a folder")
			continue
		case e.Dir:
			continue
		case !st.Mode().IsRegular():
			problems = append(problems, e.Path+": not a regular file")
			continue
		case st.Size() != e.Size:
			problems = append(problems, fmt.Sprintf("%s: %d bytes, want %d", e.Path, st.Size(), e.Size))
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			problems = append(problems, e.Path+": "+err.Error())
			continue
		}
		h := sha256.New()
		n, err := io.CopyBuffer(h, bufio.NewReaderSize(f, 1<<16), buf)
		f.Close()
		if err != nil {
			problems = append(problems, e.Path+": "+err.Error())
			continue
		}
		bytes += n
		if got := hex.EncodeToString(h.Sum(nil)); got != e.SHA256 {
			problems = append(problems, fmt.Sprintf("%s: sha256 %s, want %s", e.Path, got[:12], e.SHA256[:12]))
		}
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if !seen[filepath.ToSlash(rel)] {
			problems = append(problems, filepath.ToSlash(rel)+": not in the data set")
		}
		return nil
	})
	if len(problems) > 0 {
		sort.Strings(problems)
		n := len(problems)
		if n > 5 {
			problems = append(problems[:5], fmt.Sprintf("and %d more", n-5))
		}
		return bytes, fmt.Errorf("%w (%d problems): %s", ErrMismatch, n, strings.Join(problems, "; "))
	}
	return bytes, nil
}
