package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/isobench/isobench/internal/study"
	"github.com/isobench/isobench/internal/suggest"
)

// maxInstances bounds an instance count (--instances, instances:): more
// concurrent instances than any host can start is a typo.
const maxInstances = 4096

// Study is the YAML form of a run's matrix; every field can also be given
// as a flag (flags win).
type Study struct {
	Platforms []string `yaml:"platforms" json:"platforms"`
	Workloads []string `yaml:"workloads" json:"workloads"`
	Instances []int    `yaml:"instances" json:"instances"`
	Reps      string   `yaml:"reps" json:"reps"` // a number or "auto"
	RepsCap   int      `yaml:"reps_cap" json:"reps_cap,omitempty"`
	// PlatformReps caps some platforms' measured repetitions below Reps
	// (label -> count; runner.Target.Reps): a study run at a scale meant
	// for verdicts gives an emulated VM no more than it can use.
	PlatformReps map[string]int `yaml:"platform_reps" json:"platform_reps,omitempty"`
	Target       float64        `yaml:"target" json:"target,omitempty"` // percent, for reps: auto
	Warmup       int            `yaml:"warmup" json:"warmup"`
	Baseline     string         `yaml:"baseline" json:"baseline"`
	Image        string         `yaml:"image" json:"image"`
	// Hosts run every platform on each of them too ("local", ssh://user@addr).
	Hosts []string `yaml:"hosts" json:"hosts,omitempty"`
	// Spread runs each cell on one of Hosts instead of every platform on
	// each of them (remote.go).
	Spread bool `yaml:"spread" json:"spread,omitempty"`
	// Duet runs the two platforms at the same time on disjoint CPUs,
	// swapped every repetition (runner.Plan.Duet).
	Duet bool `yaml:"duet" json:"duet,omitempty"`
	// CPUIdle is how this host's idle CPUs wait while the run lasts:
	// "host" (as they are, the default) or "poll" (held awake,
	// cpuidle.Poll).
	CPUIdle string `yaml:"cpu_idle" json:"cpu_idle,omitempty"`
	// About is a built-in study's metadata (the paper, its platforms and
	// findings; see 'isobench study show'); it does not change the run.
	About *study.Meta `yaml:"study,omitempty" json:"study,omitempty"`
}

// studyKeys names every key a study file may have, as the Study struct
// declares them (a test keeps the two the same).
const studyKeys = `keys: platforms, workloads, instances, reps (a number or "auto"), reps_cap, platform_reps, target, warmup, baseline, image, hosts, spread, duet, cpu_idle (host or poll), study (a built-in study's metadata)`

// studyKeyKinds is what each key of a study file holds, read from the
// Study struct's yaml tags.
func studyKeyKinds() map[string]reflect.Type {
	kinds := map[string]reflect.Type{}
	t := reflect.TypeOf(Study{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			kinds[name] = t.Field(i).Type
		}
	}
	return kinds
}

// loadStudy reads a study file strictly: unknown keys are errors.
func loadStudy(path string) (Study, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Study{}, usage("study file: %v", err)
	}
	st, err := decodeStudy(b)
	if err != nil {
		return Study{}, usage("study file %s: %v", path, err)
	}
	return st, nil
}

// decodeStudy reads one YAML document into a Study strictly: unknown keys,
// a second document, instance counts that are not whole numbers from 1 to
// maxInstances and a target outside (0, 100) are errors.
func decodeStudy(b []byte) (Study, error) {
	// The document as a tree first: the decoder would truncate
	// `instances: [1.5]` to 1 and take `target: 0` for "not given".
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Study{}, fmt.Errorf("the file is empty: it needs platforms and workloads (%s)", studyKeys)
		}
		return Study{}, fmt.Errorf("%v (%s)", err, studyKeys)
	}
	var second yaml.Node
	if err := dec.Decode(&second); !errors.Is(err, io.EOF) {
		if err != nil {
			return Study{}, fmt.Errorf("after the first document: %v", err)
		}
		return Study{}, fmt.Errorf("a second YAML document starts at line %d: a study file holds one", second.Line)
	}
	if err := checkStudyKeys(&doc); err != nil {
		return Study{}, err
	}
	if err := checkStudyTree(&doc); err != nil {
		return Study{}, err
	}
	// yaml decodes `reps: 3` and `reps: auto` alike into the string.
	var st Study
	strict := yaml.NewDecoder(bytes.NewReader(b))
	strict.KnownFields(true)
	if err := strict.Decode(&st); err != nil {
		return Study{}, plainYAMLError(err)
	}
	if len(st.Platforms) == 0 || len(st.Workloads) == 0 {
		return Study{}, fmt.Errorf("needs at least one entry under platforms and under workloads")
	}
	return st, nil
}

// checkStudyKeys checks the file's shape before the decoder sees it, so a
// mistake is one line with its line number and key, in the file's terms
// (not "field workload not found in type cli.Study" or "cannot unmarshal
// !!str `1,2` into []int"): the document is a mapping, every key is one
// of the Study's (with "did you mean" for a near miss), a list key holds
// a list of plain values and any other key one plain value of its type.
func checkStudyKeys(doc *yaml.Node) error {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a study file is a mapping of keys, e.g. 'platforms: [native, docker]' and 'workloads: [cpu]', not %s (%s)", m.Line, yamlKind(m), studyKeys)
	}
	kinds := studyKeyKinds()
	known := slices.Sorted(maps.Keys(kinds))
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		t, ok := kinds[k.Value]
		if !ok {
			if s := suggest.Closest(k.Value, known); s != "" {
				return fmt.Errorf("line %d: unknown key %q: did you mean %s? (%s)", k.Line, k.Value, s, studyKeys)
			}
			return fmt.Errorf("line %d: unknown key %q (%s)", k.Line, k.Value, studyKeys)
		}
		if t.Kind() == reflect.Pointer || v.Tag == "!!null" {
			continue // the study: block (its own decoder), or an empty value
		}
		if t.Kind() == reflect.Slice {
			example := "[native, docker]"
			switch k.Value {
			case "workloads":
				example = "[cpu, memory]"
			case "instances":
				example = "[1, 2, 4]"
			case "hosts":
				example = `[local, "ssh://root@10.0.0.2"]`
			}
			if v.Kind != yaml.SequenceNode {
				return fmt.Errorf("line %d: %s: want a list, e.g. %s, not %s", v.Line, k.Value, example, yamlKind(v))
			}
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					return fmt.Errorf("line %d: %s: each entry is one value, e.g. %s, not %s", item.Line, k.Value, example, yamlKind(item))
				}
			}
			continue
		}
		if t.Kind() == reflect.Map { // platform_reps: {LABEL: N}
			example := `{"qemu": 2}`
			if v.Kind != yaml.MappingNode {
				return fmt.Errorf("line %d: %s: want a mapping of platform to repetitions, e.g. %s, not %s", v.Line, k.Value, example, yamlKind(v))
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				var n int
				if kk, vv := v.Content[j], v.Content[j+1]; kk.Kind != yaml.ScalarNode || vv.Kind != yaml.ScalarNode || vv.Decode(&n) != nil {
					return fmt.Errorf("line %d: %s: want a platform and a whole number, e.g. %s", kk.Line, k.Value, example)
				}
			}
			continue
		}
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s: want %s, not %s", v.Line, k.Value, kindWord(k.Value, t), yamlKind(v))
		}
		if err := v.Decode(reflect.New(t).Interface()); err != nil {
			return fmt.Errorf("line %d: %s: want %s, not %q", v.Line, k.Value, kindWord(k.Value, t), v.Value)
		}
	}
	return nil
}

// kindWord says what a key of type t holds, in words.
func kindWord(key string, t reflect.Type) string {
	switch {
	case key == "reps":
		return `a whole number or "auto"`
	case t.Kind() == reflect.Int:
		return "a whole number"
	case t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	}
	return "one value"
}

// yamlKind says what a node is, in words: a list, a mapping, or the value.
func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return strconv.Quote(n.Value)
}

// yaml's type errors, "line 2: field workload not found in type
// cli.Study" and "line 3: cannot unmarshal !!str `x` into []int", and the
// prefix before them.
var (
	yamlNotFound  = regexp.MustCompile(`line (\d+): field (\S+) not found in type \S+`)
	yamlCannot    = regexp.MustCompile("line (\\d+): cannot unmarshal !!\\w+(?: `([^`]*)`)? into \\S+")
	yamlErrPrefix = regexp.MustCompile(`^yaml: (unmarshal errors:\s*)?`)
)

// plainYAMLError says what the decoder found wrong (in a part that
// checkStudyKeys does not look into, such as the study: block) in one
// line without Go's type names.
func plainYAMLError(err error) error {
	msg := err.Error()
	if line, _, _ := strings.Cut(yamlErrPrefix.ReplaceAllString(msg, ""), "\n"); line != "" {
		msg = strings.TrimSpace(line)
	}
	msg = yamlNotFound.ReplaceAllString(msg, "line $1: unknown key $2")
	msg = yamlCannot.ReplaceAllStringFunc(msg, func(m string) string {
		sm := yamlCannot.FindStringSubmatch(m)
		if sm[2] != "" {
			return fmt.Sprintf("line %s: %q is not a value of the right kind here", sm[1], sm[2])
		}
		return fmt.Sprintf("line %s: a value of the wrong kind (a list or mapping where one value goes, or the reverse)", sm[1])
	})
	return fmt.Errorf("%s (%s)", msg, studyKeys)
}

// checkStudyTree checks what the decoder would silently change: every
// instance count is an integer scalar from 1 to maxInstances, and a given
// target is a percentage in (0, 100).
func checkStudyTree(doc *yaml.Node) error {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil // the strict decode reports the shape
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		switch k.Value {
		case "instances":
			if v.Kind != yaml.SequenceNode {
				continue // the strict decode reports it
			}
			for _, item := range v.Content {
				if err := checkCount(item); err != nil {
					return err
				}
			}
		case "target":
			if v.Kind != yaml.ScalarNode {
				continue
			}
			var f float64
			if err := v.Decode(&f); err != nil {
				continue // the strict decode reports it
			}
			if !validTarget(f) {
				return fmt.Errorf("line %d: target %s: want a percentage above 0 and below 100, e.g. 2", v.Line, v.Value)
			}
		}
	}
	return nil
}

func checkCount(n *yaml.Node) error {
	bad := fmt.Errorf("line %d: instances: %q: want integers from 1 to %d, e.g. [1, 2, 4]", n.Line, n.Value, maxInstances)
	if n.Kind != yaml.ScalarNode {
		return bad
	}
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			if !strings.HasPrefix(strings.TrimSpace(n.Value), "-") {
				return fmt.Errorf("line %d: instances: %s is too large (at most %d)", n.Line, n.Value, maxInstances)
			}
			return bad
		}
		if i > maxInstances {
			return fmt.Errorf("line %d: instances: %s is too large (at most %d)", n.Line, n.Value, maxInstances)
		}
		if i < 1 {
			return bad
		}
		return nil
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && f == math.Trunc(f) && f > maxInstances { // 1e6, or an integer beyond int64
			return fmt.Errorf("line %d: instances: %s is too large (at most %d)", n.Line, n.Value, maxInstances)
		}
	}
	return bad
}
