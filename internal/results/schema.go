package results

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"embed"
	"errors"
	"fmt"
	"io"
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
	SchemaCoverage = "coverage" // coverage.json of a full run, `flowtest coverage --json`
)

// CoverageFile is the assertion coverage map a full run's archive carries
// (internal/results/coverage).
const CoverageFile = "coverage.json"

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
		names := []string{SchemaScenario, SchemaRun, SchemaGate, SchemaEvidence, SchemaCoverage}
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
	v := &archiveValidator{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !v.wants(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return v.file(filepath.ToSlash(rel), data)
	})
	if err != nil {
		return nil, fmt.Errorf("validate archive %s: %w", dir, err)
	}
	return v.done(), nil
}

// ValidatePack is ValidateArchive for a pack (`archive pack`): the JSON files of its one
// folder, read from the gzip tar without unpacking it. Whether the pack is intact (digest,
// SHA256SUMS, names) is VerifyPack's; an unreadable pack is an error here.
func ValidatePack(pack string) ([]SchemaProblem, error) {
	if _, err := compiledSchemas(); err != nil {
		return nil, err
	}
	f, err := os.Open(pack)
	if err != nil {
		return nil, fmt.Errorf("validate pack: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("validate pack %s: %w", pack, err)
	}
	tr := tar.NewReader(gz)
	v := &archiveValidator{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("validate pack %s: %w", pack, err)
		}
		_, rel, ok := strings.Cut(path.Clean(hdr.Name), "/")
		if hdr.Typeflag != tar.TypeReg || !ok || !v.wants(path.Base(rel)) {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(tr, 1<<30))
		if err != nil {
			return nil, fmt.Errorf("validate pack %s: %s: %w", pack, hdr.Name, err)
		}
		if err := v.file(rel, data); err != nil {
			return nil, fmt.Errorf("validate pack %s: %w", pack, err)
		}
	}
	return v.done(), nil
}

// archiveValidator decides which schema a file of an archive has, by its path relative to
// the archive, and collects the problems.
type archiveValidator struct {
	out    []SchemaProblem
	sawRun bool
}

func (v *archiveValidator) wants(name string) bool {
	return strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, TempPrefix)
}

func (v *archiveValidator) file(rel string, data []byte) error {
	var schema string
	switch {
	case rel == "run.json":
		schema, v.sawRun = SchemaRun, true
	case rel == GateFile:
		schema = SchemaGate
	case rel == CoverageFile:
		schema = SchemaCoverage
	case path.Dir(rel) == ScenarioDir:
		schema = SchemaScenario
	case rel == "cucumber.json":
		if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(data)); err != nil {
			v.out = append(v.out, SchemaProblem{File: rel, Message: "not JSON: " + err.Error()})
		}
		return nil
	default:
		v.out = append(v.out, SchemaProblem{File: rel, Message: "no schema describes this file"})
		return nil
	}
	probs, err := ValidateJSON(schema, rel, data)
	if err != nil {
		return err
	}
	v.out = append(v.out, probs...)
	return nil
}

func (v *archiveValidator) done() []SchemaProblem {
	if !v.sawRun {
		v.out = append(v.out, SchemaProblem{File: "run.json", Message: "missing: every archive has one from its creation on"})
	}
	return v.out
}
