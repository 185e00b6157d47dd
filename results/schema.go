package results

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The JSON Schemas (draft 2020-12) of every JSON file flowtest writes. They are embedded so
// that `archive verify` checks an archive against the schemas of the flowtest that reads it,
// wherever it runs.
//
//go:embed schema/*.schema.json
var schemaFS embed.FS

// Schema names (schema/<name>.schema.json).
const (
	SchemaScenario = "scenario"
	SchemaRun      = "run"
	SchemaGate     = "gate"
	SchemaEvidence = "evidence" // `flowtest evidence --json`
)

// SchemaProblem is one place where a file does not match its schema.
type SchemaProblem struct {
	File    string // relative to the archive (slash-separated), or the name the caller gave
	Pointer string // JSON pointer (RFC 6901) into the file; "" is the whole document
	Message string
}

func (p SchemaProblem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "/"
	}
	return fmt.Sprintf("%s: %s: %s", p.File, ptr, p.Message)
}

var (
	schemasOnce sync.Once
	schemas     map[string]*jsonschema.Schema
	schemasErr  error
)

// compiledSchemas compiles the embedded schemas once. Formats (date-time) are asserted, not
// only annotated: a timestamp that is not RFC 3339 is a problem for every consumer.
func compiledSchemas() (map[string]*jsonschema.Schema, error) {
	schemasOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		names := []string{SchemaScenario, SchemaRun, SchemaGate, SchemaEvidence}
		ids := map[string]string{}
		for _, n := range names {
			data, err := schemaFS.ReadFile("schema/" + n + ".schema.json")
			if err != nil {
				schemasErr = fmt.Errorf("schema %s: %w", n, err)
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				schemasErr = fmt.Errorf("schema %s: %w", n, err)
				return
			}
			id, _ := doc.(map[string]any)["$id"].(string)
			if id == "" {
				schemasErr = fmt.Errorf("schema %s has no $id", n)
				return
			}
			if err := c.AddResource(id, doc); err != nil {
				schemasErr = fmt.Errorf("schema %s: %w", n, err)
				return
			}
			ids[n] = id
		}
		schemas = map[string]*jsonschema.Schema{}
		for _, n := range names {
			s, err := c.Compile(ids[n])
			if err != nil {
				schemasErr = fmt.Errorf("schema %s: %w", n, err)
				return
			}
			schemas[n] = s
		}
	})
	return schemas, schemasErr
}

// ValidateJSON checks one document against the named schema (SchemaScenario, SchemaRun,
// SchemaGate, SchemaEvidence); file names the document in the problems. A document that is
// not JSON is one problem, not an error: the error is for a schema that does not compile.
func ValidateJSON(schema, file string, data []byte) ([]SchemaProblem, error) {
	all, err := compiledSchemas()
	if err != nil {
		return nil, err
	}
	s, ok := all[schema]
	if !ok {
		return nil, fmt.Errorf("no schema %q", schema)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return []SchemaProblem{{File: file, Message: "not JSON: " + err.Error()}}, nil
	}
	err = s.Validate(doc)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("%s: validate: %w", file, err)
	}
	var out []SchemaProblem
	p := message.NewPrinter(language.English)
	var leaves func(e *jsonschema.ValidationError)
	// The leaves are the concrete problems ("missing property", "additional property");
	// the inner nodes only say that something below failed.
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, SchemaProblem{File: file, Pointer: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(p)})
			return
		}
		for _, c := range e.Causes {
			leaves(c)
		}
	}
	leaves(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out, nil
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/")
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// ValidateArchive checks every JSON file of an archive folder against its schema: run.json,
// gate.json, scenarios/*.json. cucumber.json follows Cucumber's format, not ours: it is only
// checked to be JSON. Any other .json file is a problem too, since no schema describes it (a
// file added to the writer must come with its schema). In-flight temp files (.tmp-*) are
// skipped, as every reader skips them. The error is for an archive that cannot be read.
func ValidateArchive(dir string) ([]SchemaProblem, error) {
	if _, err := compiledSchemas(); err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("validate archive: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("validate archive: %s is not a directory", dir)
	}
	var out []SchemaProblem
	sawRun := false
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".json") || strings.HasPrefix(d.Name(), TempPrefix) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var schema string
		switch {
		case rel == "run.json":
			schema, sawRun = SchemaRun, true
		case rel == GateFile:
			schema = SchemaGate
		case path.Dir(rel) == ScenarioDir:
			schema = SchemaScenario
		case rel == "cucumber.json":
			if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(data)); err != nil {
				out = append(out, SchemaProblem{File: rel, Message: "not JSON: " + err.Error()})
			}
			return nil
		default:
			out = append(out, SchemaProblem{File: rel, Message: "no schema describes this file"})
			return nil
		}
		probs, err := ValidateJSON(schema, rel, data)
		if err != nil {
			return err
		}
		out = append(out, probs...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("validate archive %s: %w", dir, err)
	}
	if !sawRun {
		out = append(out, SchemaProblem{File: "run.json", Message: "missing: every archive has one from its creation on"})
	}
	return out, nil
}
