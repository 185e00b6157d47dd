// Package runner drives godog: it discovers the feature files, orders the scenarios by the
// run-order manifest, selects them with Cucumber tag expressions, runs them one at a time
// with per-step deadlines, panic-safe cleanup and interrupt handling, and streams a record
// of every scenario to the results archive as soon as it ends.
package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"regexp"

	"gopkg.in/yaml.v3"
)

// Entry is one scenario of the run-order manifest.
type Entry struct {
	ID         string   `yaml:"id"`
	Series     string   `yaml:"series"`
	Acceptance []string `yaml:"acceptance"`
	// Needs are what the scenario requires beyond the base E2E environment. This is the one
	// declaration of them: preflight, fixture preparation, the dry-run plan, `flowtest list`
	// and not-run reasons all read it.
	Needs Needs `yaml:"needs"`
	// Limits says what the scenario cannot show or where it differs from the original.
	Limits string `yaml:"limits"`
}

// Tags are the tags an entry implies: @<id>, @<series>, @acc-<n>. A feature file carries
// them too; for an entry without a feature file they decide whether a tag expression would
// have selected it (so "not implemented" is reported instead of "filtered").
func (e Entry) Tags() []string {
	tags := []string{"@" + e.ID, "@" + e.Series}
	for _, a := range e.Acceptance {
		tags = append(tags, "@acc-"+a)
	}
	return tags
}

// Manifest is the run order.
type Manifest struct {
	SchemaVersion int     `yaml:"schema_version"`
	Scenarios     []Entry `yaml:"scenarios"`
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// LoadManifest reads and validates the manifest at path in fsys; errors name path.
func LoadManifest(fsys fs.FS, path string) (*Manifest, error) {
	data, err := fs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("read run-order manifest: %w", err)
	}
	return ParseManifest(path, data)
}

// ParseManifest parses and validates manifest text; name (the file) prefixes every error, with
// the line where the YAML has one.
func ParseManifest(name string, data []byte) (*Manifest, error) {
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		var ne *needError
		if errors.As(err, &ne) {
			return nil, fmt.Errorf("%s:%d: %s", name, ne.line, ne.msg)
		}
		return nil, fmt.Errorf("%s: parse run-order manifest: %w", name, err)
	}
	if m.SchemaVersion != 1 {
		return nil, fmt.Errorf("%s: schema_version %d, want 1", name, m.SchemaVersion)
	}
	if len(m.Scenarios) == 0 {
		return nil, fmt.Errorf("%s: the run-order manifest lists no scenarios", name)
	}
	seen := map[string]int{}
	for i := range m.Scenarios {
		e := &m.Scenarios[i]
		if !idPattern.MatchString(e.ID) {
			return nil, fmt.Errorf("%s: entry %d: id %q is not lower-case letters, digits and dashes", name, i+1, e.ID)
		}
		if !idPattern.MatchString(e.Series) {
			return nil, fmt.Errorf("%s: entry %s: series %q is not lower-case letters, digits and dashes", name, e.ID, e.Series)
		}
		if prev, dup := seen[e.ID]; dup {
			return nil, fmt.Errorf("%s: id %s listed twice (entries %d and %d)", name, e.ID, prev, i+1)
		}
		seen[e.ID] = i + 1
	}
	return &m, nil
}

// Entry returns the entry with id.
func (m *Manifest) Entry(id string) (Entry, bool) {
	for _, e := range m.Scenarios {
		if e.ID == id {
			return e, true
		}
	}
	return Entry{}, false
}
