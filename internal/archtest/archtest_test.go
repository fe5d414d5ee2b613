package archtest

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// graph is the import graph of the module's packages: for each package
// (its directory relative to the module root, e.g. "internal/platform/qemu")
// the module packages it imports. It is read from the source files' import
// lines for every GOOS and GOARCH at once (build constraints are ignored),
// test files excepted: a test may import what its package cannot.
type graph map[string][]string

// loadGraph parses the imports of every non-test Go file under the
// module's cmd and internal directories.
func loadGraph(t *testing.T) graph {
	t.Helper()
	root, module := moduleRoot(t)
	g := graph{}
	fset := token.NewFileSet()
	for _, top := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			pkg := filepath.ToSlash(rel)
			if _, ok := g[pkg]; !ok {
				g[pkg] = nil
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if dep, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(g[pkg], dep) {
					g[pkg] = append(g[pkg], dep)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(g) < 10 {
		t.Fatalf("found only %d packages under %s: is the module root right?", len(g), root)
	}
	return g
}

// moduleRoot finds go.mod above the test's directory and the module path
// it declares.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			t.Fatalf("%s/go.mod declares no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// under says whether pkg is tree or inside it.
func under(pkg, tree string) bool { return pkg == tree || strings.HasPrefix(pkg, tree+"/") }

// treeOf is the package tree pkg belongs to: its first two path elements
// ("internal/platform" for internal/platform/qemu).
func treeOf(pkg string) string {
	parts := strings.SplitN(pkg, "/", 3)
	if len(parts) < 2 {
		return pkg
	}
	return parts[0] + "/" + parts[1]
}

// importsInto lists the packages in tree that pkg imports.
func (g graph) importsInto(pkg, tree string) []string {
	var out []string
	for _, dep := range g[pkg] {
		if under(dep, tree) {
			out = append(out, dep)
		}
	}
	return out
}

// TestNoImportBackUp: the edges issue 24 removed stay removed. Each went
// from a package that a package tree imports back up into that tree.
func TestNoImportBackUp(t *testing.T) {
	g := loadGraph(t)
	for _, e := range []struct{ from, into, why string }{
		// qemu and docker-in-vm import guest
		{"internal/guest", "internal/platform", "the VM guest's init is below the platforms that boot it"},
		// eight platforms import image
		{"internal/image", "internal/platform", "image trees are built below the platforms that use them"},
		// cleanup imports hostnet
		{"internal/hostnet", "internal/cleanup", "the host network is below the cleanup that removes what runs left on it"},
		// remote imports the platform contract
		{"internal/platform/dockervm", "internal/remote", "docker-in-vm reaches its VM's platformd through internal/platform/platformd"},
		{"internal/platform/platformd", "internal/remote", "the protocol is below the SSH transport that carries it"},
	} {
		if _, ok := g[e.from]; !ok {
			t.Errorf("no package %s: update this test", e.from)
			continue
		}
		if deps := g.importsInto(e.from, e.into); len(deps) > 0 {
			t.Errorf("%s imports %s: %s", e.from, strings.Join(deps, ", "), e.why)
		}
	}
}

// TestTreesAcyclic: between package trees (the directories under internal/
// and cmd/, each with everything below it), imports form no cycle, so no
// package imports back up into a tree that imports it.
func TestTreesAcyclic(t *testing.T) {
	g := loadGraph(t)
	// why[a][b] is one import that makes tree a import tree b
	why := map[string]map[string]string{}
	for pkg, deps := range g {
		for _, dep := range deps {
			a, b := treeOf(pkg), treeOf(dep)
			if a == b {
				continue
			}
			if why[a] == nil {
				why[a] = map[string]string{}
			}
			if _, ok := why[a][b]; !ok || pkg+" -> "+dep < why[a][b] {
				why[a][b] = pkg + " -> " + dep
			}
		}
	}
	trees := make([]string, 0, len(why))
	for a := range why {
		trees = append(trees, a)
	}
	slices.Sort(trees)
	// depth-first search; a grey tree met again closes a cycle
	const white, grey, black = 0, 1, 2
	color := map[string]int{}
	var path []string
	var visit func(a string) bool
	visit = func(a string) bool {
		color[a] = grey
		path = append(path, a)
		next := make([]string, 0, len(why[a]))
		for b := range why[a] {
			next = append(next, b)
		}
		slices.Sort(next)
		for _, b := range next {
			switch color[b] {
			case grey:
				i := slices.Index(path, b)
				cycle := append(slices.Clone(path[i:]), b)
				var edges []string
				for k := 0; k+1 < len(cycle); k++ {
					edges = append(edges, why[cycle[k]][cycle[k+1]])
				}
				t.Errorf("package trees import each other: %s (%s)", strings.Join(cycle, " -> "), strings.Join(edges, "; "))
				return true
			case white:
				if visit(b) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		color[a] = black
		return false
	}
	for _, a := range trees {
		if color[a] == white && visit(a) {
			return
		}
	}
}

// leaves import nothing of isobench's, so every layer can use them.
var leaves = []string{
	"internal/guestenv", // what an instance's inside looks like
	"internal/hostos",   // /proc, cgroup, mount and file helpers
	"internal/runrec",   // records of running isobench processes
	"internal/spec",     // option strings, sizes, durations
}

func TestLeaves(t *testing.T) {
	g := loadGraph(t)
	for _, pkg := range leaves {
		deps, ok := g[pkg]
		if !ok {
			t.Errorf("no package %s: update this test", pkg)
			continue
		}
		if len(deps) > 0 {
			t.Errorf("%s imports %s: it must import nothing of isobench's", pkg, strings.Join(deps, ", "))
		}
	}
}

// TestContract: the platform contract (internal/platform) imports only
// leaf packages. The helpers the platforms share are in leaves of their
// own (hostos, guestenv) or in packages below the contract's tree
// (platform/local, platform/platformd), never in the contract, so that
// guest, image and hostnet need not import it.
func TestContract(t *testing.T) {
	g := loadGraph(t)
	for _, dep := range g["internal/platform"] {
		if len(g[dep]) > 0 {
			t.Errorf("internal/platform imports %s, which imports %s: the contract imports leaf packages only", dep, strings.Join(g[dep], ", "))
		}
	}
	if _, ok := g["internal/platform"]; !ok {
		t.Fatal("no package internal/platform: update this test")
	}
	// nor does it keep (or alias) what moved out of it
	root, _ := moduleRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "internal", "platform", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	moved := map[string]string{
		"ScratchDir": "guestenv", "ScratchEnv": "guestenv", "NoResolver": "guestenv",
		"ParseStat": "hostos", "ProcStat": "hostos", "ParentPID": "hostos", "ProcArgv": "hostos",
		"SocketPeerPID": "hostos", "CgroupUsage": "hostos", "CgroupMemory": "hostos", "CgroupCPU": "hostos",
		"ProcessCgroups": "hostos", "DiskUsage": "hostos", "DisksUsage": "hostos", "UnescapeMount": "hostos",
		"ReplaceFile": "hostos", "CgroupOOMKills": "hostos", "MemoryCgroupOf": "hostos", "CgroupRoot": "hostos",
		"OwnProcessGroup": "hostos", "KillGroup": "hostos", "FormatSize": "spec",
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range topLevel(f) {
			if to, ok := moved[id.Name]; ok {
				t.Errorf("%s: platform.%s is in package %s now", fset.Position(id.Pos()), id.Name, to)
			}
		}
	}
}

// topLevel lists the names f declares at package level (functions, not
// methods; constants, variables and types).
func topLevel(f *ast.File) []*ast.Ident {
	var out []*ast.Ident
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				out = append(out, d.Name)
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.ValueSpec:
					out = append(out, sp.Names...)
				case *ast.TypeSpec:
					out = append(out, sp.Name)
				}
			}
		}
	}
	return out
}
