package report

import (
	"bytes"
	"flag"
	"github.com/isobench/isobench/internal/testkit/golden"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/stats"
)

// go test ./internal/report -update rewrites the golden files from the
// current output; review the diff before committing it.
var update = flag.Bool("update", false, "rewrite testdata/golden/* from the current output")

// goldenPlatforms are the synthetic platforms plus one whose options carry
// characters every format must escape or quote.
var goldenPlatforms = append(append([]synthPlatform{}, synthPlatforms...), synthPlatform{"lxc", `note=<b>&"x"|y`, 0.97})

// goldenDoc is a fixed synthetic run: fixed noise seed, bootstrap seed,
// fingerprint and run id, and no clock anywhere, so every render is the
// same bytes on every machine.
func goldenDoc(seed int64) Doc {
	ss := synthSamples(1, seed, []int{1, 2, 4}, 6, goldenPlatforms, synthMetrics)
	return Doc{Run: 1, Status: "done", Fingerprint: synthFingerprint(),
		Cells: Cells(ss, Options{Baseline: "native", Stats: stats.Options{Seed: 1}})}
}

var goldenFormats = map[string]func(io.Writer, Doc) error{
	"table.txt":   func(w io.Writer, d Doc) error { return Table(w, d.Cells) },
	"markdown.md": Markdown,
	"csv.csv":     CSV,
	"json.json":   JSON,
	"json.jsonl":  JSONL,
	"html.html":   HTML,
	"compare.txt": func(w io.Writer, d Doc) error {
		b := goldenDoc(8)
		return ChangeTable(w, CompareCellsFamilywise(d.Cells, b.Cells, stats.Options{Seed: 1}))
	},
}

func TestGolden(t *testing.T) {
	for name, render := range goldenFormats {
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			if err := render(&got, goldenDoc(7)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", name)
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run 'go test ./internal/report -update' to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("%s changed: %s\n(if the change is intended: go test ./internal/report -update, and review the diff)", path, golden.FirstDiff(string(want), got.String()))
			}
		})
	}
}

// The golden render is deterministic: two renders in one process agree
// (so a golden mismatch is a change of format, not noise).
func TestGoldenDeterministic(t *testing.T) {
	for name, render := range goldenFormats {
		var a, b bytes.Buffer
		render(&a, goldenDoc(7))
		render(&b, goldenDoc(7))
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two renders differ: %s", name, golden.FirstDiff(a.String(), b.String()))
		}
	}
}

// A '|' or '<' in a label stays inside its Markdown cell: every row of a
// table has as many unescaped column bars as its header.
func TestMarkdownEscapesCells(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown(&b, goldenDoc(7)); err != nil {
		t.Fatal(err)
	}
	bars := func(l string) int { return strings.Count(l, "|") - strings.Count(l, `\|`) }
	want := 0
	rows := 0
	for _, l := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(l, "|") {
			want = 0
			continue
		}
		if want == 0 {
			want = bars(l)
			continue
		}
		rows++
		if bars(l) != want {
			t.Fatalf("row has %d column bars, its header %d: %s", bars(l), want, l)
		}
		if strings.Contains(strings.ReplaceAll(l, `\<`, ""), "<") {
			t.Fatalf("raw '<' in a Markdown row: %s", l)
		}
	}
	if rows == 0 || !strings.Contains(b.String(), `lxc:note=\<b\>&"x"\|y`) {
		t.Fatalf("no escaped label row in:\n%s", b.String())
	}
}
