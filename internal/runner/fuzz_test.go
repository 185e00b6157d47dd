package runner

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"github.com/ksqlflow/flowtest/internal/base/yamlerr"
)

// FuzzParseManifest: no manifest text panics the loader; every refusal is one line starting
// with the file name; an accepted manifest has unique, well-formed ids whose tags never
// collide with a series.
//
//	go test -run '^$' -fuzz FuzzParseManifest -fuzztime 2m ./runner
func FuzzParseManifest(f *testing.F) {
	if real, err := os.ReadFile("../../features/manifest.yaml"); err == nil {
		f.Add(real)
	}
	f.Add([]byte(selfManifest))
	f.Add([]byte("schema_version: 1\nscenarios:\n  - {id: a, series: s, needs: [windows, confirmer], acceptance: [\"1\"]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest("m.yaml", data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "m.yaml:") || strings.Contains(msg, "\n") {
				t.Fatalf("%q: error is not one line naming the file: %q", data, msg)
			}
			if w := fileLine.FindStringSubmatch(msg); w != nil {
				if n, _ := strconv.Atoi(w[1]); n < 1 || n > yamlerr.LastLine(data) {
					t.Fatalf("%q: error names line %d of a text of %d lines: %q", data, n, yamlerr.LastLine(data), msg)
				}
			}
			return
		}
		ids := map[string]bool{}
		series := map[string]bool{}
		for _, e := range m.Scenarios {
			series[e.Series] = true
		}
		for _, e := range m.Scenarios {
			if ids[e.ID] || !idPattern.MatchString(e.ID) || !idPattern.MatchString(e.Series) || series[e.ID] {
				t.Fatalf("%q: accepted entry %+v", data, e)
			}
			ids[e.ID] = true
			for _, n := range e.Needs {
				if n.About() == "" {
					t.Fatalf("%q: accepted unknown need %q", data, n)
				}
			}
		}
	})
}

// fileLine is the line (and column) a refusal names after the file: "file:5: …", "file:5:3: …".
var fileLine = regexp.MustCompile(`^[^:]+:(\d+)(?::(\d+))?: `)

// FuzzDiscover: no feature file text panics discovery; a refusal is one line naming the file,
// and the line (and column) it names exist in the text.
//
//	go test -run '^$' -fuzz FuzzDiscover -fuzztime 2m ./runner
func FuzzDiscover(f *testing.F) {
	f.Add([]byte("Feature: x\n  @gamma @s2\n  Scenario: y\n    Given a step that passes\n"))
	f.Add([]byte("Feature: x\n  @gamma @s2\n  Scenario Outline: y <a>\n    Given a step that <a>\n    Examples:\n      | a |\n      | passes |\n"))
	f.Add([]byte("# language: ja\n機能: x\n  @gamma @s2\n  シナリオ: y\n    前提 a step that passes\n"))
	f.Add([]byte("Feature: x\n  Rule: r\n    @gamma @s2\n    Scenario: y\n      Given a\n      \"\"\"\n      doc\n      \"\"\"\n"))
	f.Add([]byte("\ufeffFeature: x\n  @gamma @s2\n  Scenario: y\n    Given a step that passes\n"))
	f.Add([]byte("Feature: x\n  @gamma @s2\n  Scenario: y\n    Given a step that passes\n    \"\"\"\n    doc\n"))
	f.Add([]byte("Feature: x\n  @gamma @s2\n  Scenario: y\n    Given a\n      | a |\n      | b "))
	f.Add([]byte("Feature: x\n  @gamma @s2\n  Scenario: y\n    Given a step that " + strings.Repeat("p", 1<<16)))
	m, err := ParseManifest("manifest.yaml", []byte(selfManifest))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{"x/fuzz.feature": {Data: data}}
		feats, err := DiscoverNamed(fsys, ".", m, "features")
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "features/x/fuzz.feature") || strings.Contains(msg, "\n") {
				t.Fatalf("%q: error is not one line naming the file: %q", data, msg)
			}
			if w := fileLine.FindStringSubmatch(msg); w != nil {
				n, _ := strconv.Atoi(w[1])
				lines := strings.Split(string(data), "\n")
				if n < 1 || n > lastLine(data) {
					t.Fatalf("%q: error names line %d of a text of %d lines: %q", data, n, lastLine(data), msg)
				}
				if c, _ := strconv.Atoi(w[2]); w[2] != "" && (c < 1 || c > utf8.RuneCountInString(lines[n-1])+1) {
					t.Fatalf("%q: error names column %d of line %d, %q: %q", data, c, n, lines[n-1], msg)
				}
			}
			return
		}
		for id, ft := range feats {
			if _, ok := m.Entry(id); !ok || ft.Path != "x/fuzz.feature" {
				t.Fatalf("%q: discovered %s at %s", data, id, ft.Path)
			}
		}
	})
}

// FuzzParseKnownDefects: no catalogue text (features/known-defects.yaml) panics its parser; a
// refusal is one line naming the file, at a line that exists; an accepted entry names a
// manifest scenario.
//
//	go test -run '^$' -fuzz '^FuzzParseKnownDefects$' -fuzztime 2m ./runner
func FuzzParseKnownDefects(f *testing.F) {
	if real, err := os.ReadFile("../../features/known-defects.yaml"); err == nil {
		f.Add(real)
	}
	f.Add([]byte("schema_version: 1\ndefects:\n" + kpdEntry))
	f.Add([]byte("schema_version: 1\ndefects: []\n"))
	f.Add([]byte("schema_version: 1\ndefects:\n  - {id: KPD-01, scenario: nope}\n"))
	m, err := ParseManifest("manifest.yaml", []byte(selfManifest))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := ParseKnownDefects("k.yaml", data, m, evidenceRepo)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "k.yaml") || strings.Contains(msg, "\n") {
				t.Fatalf("%q: error is not one line naming the file: %q", data, msg)
			}
			if w := fileLine.FindStringSubmatch(msg); w != nil {
				if n, _ := strconv.Atoi(w[1]); n < 1 || n > yamlerr.LastLine(data) {
					t.Fatalf("%q: error names line %d of a text of %d lines: %q", data, n, yamlerr.LastLine(data), msg)
				}
			}
			return
		}
		for _, d := range ds {
			if _, ok := m.Entry(d.Scenario); !ok {
				t.Fatalf("%q: accepted a defect of unknown scenario %q", data, d.Scenario)
			}
		}
	})
}
