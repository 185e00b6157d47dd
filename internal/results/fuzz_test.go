package results_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/internal/archivetest"
)

// FuzzReadArchive: no run.json or scenario record panics the archive readers (ReadArchive,
// FailedScenarios, CheckIntegrity, schema validation); a refusal names the file it could not
// read; an accepted record prints to JSON that reads back to the same JSON (print → parse →
// print is stable); --rerun's reader refuses exactly what CheckReadable refuses and its failed
// ids are ids of records; every integrity or schema problem names a file inside the archive.
//
//	go test -run '^$' -fuzz '^FuzzReadArchive$' -fuzztime 2m ./results
func FuzzReadArchive(f *testing.F) {
	dir := archivetest.Finished(f)
	run, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		f.Fatal(err)
	}
	recs, _ := filepath.Glob(filepath.Join(dir, results.ScenarioDir, "*.json"))
	for _, r := range recs {
		rec, err := os.ReadFile(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(run, rec)
	}
	f.Add([]byte(`{"schema_version":1,"state":"interrupted","run_order":["a","a"]}`), []byte(`{"schema_version":1,"id":"a","status":"failed"}`))
	f.Add([]byte(`{"schema_version":99}`), []byte(`{}`))
	f.Add([]byte(`{"scenarios":[{"id":"s","status":"passed","file":"../x.json"}]}`), []byte(`{"id":"s","status":"blocked","steps":[{"status":"x"}]}`))
	f.Add([]byte("\ufeff{}"), []byte("\xff\xfe{\x00}\x00"))
	f.Add([]byte(`null`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, runJSON, record []byte) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, results.ScenarioDir), 0o755); err != nil {
			t.Fatal(err)
		}
		recFile := path.Join(results.ScenarioDir, "s.json")
		if err := os.WriteFile(filepath.Join(dir, "run.json"), runJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(recFile)), record, 0o644); err != nil {
			t.Fatal(err)
		}
		scen, _, err := results.ReadArchive(dir)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "run.json") && !strings.Contains(msg, recFile) {
				t.Fatalf("refusal names neither run.json nor %s: %q", recFile, msg)
			}
		} else {
			for _, s := range scen {
				once, err := json.Marshal(s)
				if err != nil {
					t.Fatalf("an accepted record does not print: %v", err)
				}
				var back results.Scenario
				if err := json.Unmarshal(once, &back); err != nil {
					t.Fatalf("a printed record does not read back: %v\n%s", err, once)
				}
				twice, _ := json.Marshal(&back)
				if !bytes.Equal(once, twice) {
					t.Fatalf("print → parse → print changed the record:\n%s\n%s", once, twice)
				}
			}
			// --rerun reads only a verified archive: FailedScenarios refuses exactly what
			// CheckReadable (members, then integrity) refuses, naming the archive.
			ids, err := results.FailedScenarios(dir)
			if rerr := results.CheckReadable(dir); (err == nil) != (rerr == nil) {
				t.Fatalf("CheckReadable says %v, FailedScenarios %v", rerr, err)
			}
			if err != nil && !strings.Contains(err.Error(), dir) {
				t.Fatalf("FailedScenarios' refusal names no archive: %v", err)
			}
			for _, id := range ids {
				found := false
				for _, s := range scen {
					found = found || s.ID == id
				}
				if !found {
					t.Fatalf("failed id %q is no record's", id)
				}
			}
		}
		// A problem names a file inside the archive: a row or gate record of run.json naming
		// "../x.json" is a problem of run.json, never a file read outside (issue 42 item 6).
		for _, p := range results.CheckIntegrity(dir) {
			if p.File == "" || p.What == "" || strings.Contains(p.String(), "\n") {
				t.Fatalf("integrity problem names no file or is not one line: %+v", p)
			}
			if !filepath.IsLocal(filepath.FromSlash(p.File)) {
				t.Fatalf("integrity problem names a file outside the archive: %+v", p)
			}
		}
		for _, c := range []struct{ schema, file string }{{results.SchemaRun, "run.json"}, {results.SchemaScenario, recFile}} {
			data := runJSON
			if c.file == recFile {
				data = record
			}
			probs, err := results.ValidateJSON(c.schema, c.file, data)
			if err != nil {
				t.Fatalf("validate %s: %v", c.file, err)
			}
			for _, p := range probs {
				if p.File != c.file {
					t.Fatalf("schema problem of %s names %q", c.file, p.File)
				}
			}
		}
	})
}
