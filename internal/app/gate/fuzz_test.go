package gate

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ksqlflow/flowtest/internal/base/yamlerr"
)

var gateErr = regexp.MustCompile(`^g\.yaml(:(\d+))?: `)

// FuzzParseDefinition: no gate definition text panics the parser; every refusal is one line
// naming g.yaml, and the line it names exists in the text; an accepted gate requires at least
// one scenario, and each carry-over rule names a known series with clean relative paths.
//
//	go test -run '^$' -fuzz '^FuzzParseDefinition$' -fuzztime 2m ./internal/gate
func FuzzParseDefinition(f *testing.F) {
	gates, _ := filepath.Glob(filepath.Join("..", "..", "..", "features", "gates", "*.yaml"))
	for _, g := range gates {
		if b, err := os.ReadFile(g); err == nil {
			// Renamed to the file the target parses, so the seed is accepted.
			name := strings.TrimSuffix(filepath.Base(g), ".yaml")
			f.Add(bytes.Replace(b, []byte("name: "+name+"\n"), []byte("name: g\n"), 1))
		}
	}
	head := "schema_version: 1\nname: g\n"
	for _, s := range []string{
		head + "required: \"@m5\"\nrequired_count: 5\n",
		head + "required: \"@m5\"\ncarry_over:\n  - {series: csv1, paths: [src/io/, \"docs/*.md\"], justification: x}\n",
		head + "required: \"@m5\n", head + "required: [\"@m5\"]\n", head + "required: \"@m5\"\n---\nname: x\n",
		"\ufeff" + head + "required: \"@m5\"\r\n", head + "required: &a \"@m5\"\ntitle: *a\n", "[", "{a: [", "",
	} {
		f.Add([]byte(s))
	}
	items := manifestItems(f)
	series := map[string]bool{}
	for _, it := range items {
		series[it.Entry.Series] = true
	}
	file := filepath.Join(f.TempDir(), "g.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(file, data, items)
		lines := yamlerr.LastLine(data)
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), filepath.Dir(file)+string(filepath.Separator))
			m := gateErr.FindStringSubmatch(msg)
			if m == nil || strings.Contains(msg, "\n") {
				t.Fatalf("%q: error is not one line naming g.yaml: %q", data, err)
			}
			if m[2] != "" {
				if n, _ := strconv.Atoi(m[2]); n < 1 || n > lines {
					t.Fatalf("%q: error names line %d of a text of %d lines: %q", data, n, lines, msg)
				}
			}
			return
		}
		if len(g.RequiredIDs(items)) == 0 {
			t.Fatalf("%q: accepted a gate that requires nothing", data)
		}
		for _, r := range g.Rules {
			if !series[r.Series] || len(r.Paths) == 0 || r.Justification == "" {
				t.Fatalf("%q: accepted rule %+v", data, r)
			}
			for _, p := range r.Paths {
				if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "..") {
					t.Fatalf("%q: accepted path %q", data, p)
				}
			}
		}
	})
}
