package scope

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// FuzzRender: no network YAML or SQL text panics the fixture renderer; a refusal is one line
// naming the fixture; an accepted fixture renders to YAML that parses, with every job id
// under the scope's prefix and every file written inside the destination.
//
//	go test -run '^$' -fuzz FuzzRender -fuzztime 2m ./harness/scope
func FuzzRender(f *testing.F) {
	for _, name := range []string{"network-success.yaml", "network-diamond.yaml", "network-drill.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "features", "fixtures", "networks", name)); err == nil {
			f.Add(b, []byte("-- @ksql name: x\nSELECT 1;\n"))
		}
	}
	f.Add([]byte(diamondYAML), []byte(diamondSQL()["join.sql"]))
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
