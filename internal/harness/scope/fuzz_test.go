package scope

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/base/yamlerr"
)

var (
	yamlLine = regexp.MustCompile(`^render .*net\.yaml:(\d+): `)
	sqlLine  = regexp.MustCompile(`sql [^:]*\.sql:(\d+): `)
)

// FuzzRender: no network YAML or SQL text panics the fixture renderer; a refusal is one line
// naming the fixture; an accepted fixture renders to YAML that parses, with every job id
// under the scope's prefix and every file written inside the destination.
//
//	go test -run '^$' -fuzz FuzzRender -fuzztime 2m ./harness/scope
func FuzzRender(f *testing.F) {
	for _, name := range []string{"network-success.yaml", "network-diamond.yaml", "network-drill.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "..", "features", "fixtures", "networks", name)); err == nil {
			f.Add(b, []byte("-- @ksql name: x\nSELECT 1;\n"))
		}
	}
	f.Add([]byte(diamondYAML), []byte(diamondSQL()["join.sql"]))
	f.Add([]byte("schema_version: 1\nnetwork_id: n\nnodes:\n  - {id: a, job_id: j, sql: ../jobs/j.sql"), []byte("-- @ksql name: j\n"))
	f.Add([]byte("\xff\xfes\x00c\x00"), []byte("\xff\xfe-\x00-\x00"))
	f.Add([]byte("schema_version: 1\nnetwork_id: n\nnodes:\n  - {id: a, job_id: j, sql: ../jobs/j.sql, depends_on: [b]}\n"), []byte("\ufeff-- x\r\n-- @ksql name: j\r\n-- @ksql depends_on: k, l\r\nSELECT 1;\r\n"))
	sc, err := New("fuzz", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), strings.NewReader(strings.Repeat("\x01", 64)))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, network, sql []byte) {
		dir := t.TempDir()
		src := filepath.Join(dir, "fixtures", "networks", "net.yaml")
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "fixtures", "jobs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(src, network, 0o644); err != nil {
			t.Fatal(err)
		}
		// Every SQL path the fuzzer is likely to name resolves to the fuzzed SQL text.
		for _, n := range []string{"j.sql", "x.sql"} {
			if err := os.WriteFile(filepath.Join(dir, "fixtures", "jobs", n), sql, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dst := filepath.Join(dir, "out")
		r, err := sc.Render(src, dst, RenderOptions{})
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "render "+src) || strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line naming the fixture: %q", msg)
			}
			// The line a refusal names exists: in the network YAML, or in the job's SQL.
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				if n, _ := strconv.Atoi(m[1]); n < 1 || n > yamlerr.LastLine(network) {
					t.Fatalf("error names line %d of a network YAML of %d lines: %q", n, yamlerr.LastLine(network), msg)
				}
			}
			if m := sqlLine.FindStringSubmatch(msg); m != nil {
				if n, _ := strconv.Atoi(m[1]); n < 1 || n > lastLine(sql) {
					t.Fatalf("error names line %d of a SQL text of %d lines: %q", n, lastLine(sql), msg)
				}
			}
			return
		}
		out, err := os.ReadFile(r.Path)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, out)
		}
		for _, n := range r.Nodes {
			if !strings.HasPrefix(n.JobID, Prefix) || !strings.HasPrefix(n.ID, Prefix) {
				t.Fatalf("node %+v not under the prefix", n)
			}
		}
		for _, p := range r.Files {
			if rel, err := filepath.Rel(dst, p); err != nil || strings.HasPrefix(rel, "..") {
				t.Fatalf("wrote %s outside %s", p, dst)
			}
		}
	})
}

// lastLine is the number of the last line of a text (1 for an empty one).
func lastLine(data []byte) int {
	n := strings.Count(string(data), "\n")
	if len(data) == 0 || data[len(data)-1] != '\n' {
		n++
	}
	return n
}
