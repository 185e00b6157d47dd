// Package runner drives godog: it discovers the feature files, orders the scenarios by the
// run-order manifest, selects them with Cucumber tag expressions, runs them one at a time
// with per-step deadlines, panic-safe cleanup and interrupt handling, and streams a record
// of every scenario to the results archive as soon as it ends.
package runner

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Entry is one scenario of the run-order manifest.
type Entry struct {
	ID         string   `yaml:"id"`
	Series     string   `yaml:"series"`
	Acceptance []string `yaml:"acceptance"`
	// Platform is "any" (default) or a GOOS the scenario can only run on.
	Platform string `yaml:"platform"`
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

// LoadManifest reads and validates the manifest at path in fsys.
func LoadManifest(fsys fs.FS, path string) (*Manifest, error) {
	data, err := fs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("read run-order manifest: %w", err)
	}
	return ParseManifest(data)
}

// ParseManifest parses and validates manifest text.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("parse run-order manifest: %w", err)
	}
	if m.SchemaVersion != 1 {
		return nil, fmt.Errorf("run-order manifest: schema_version %d, want 1", m.SchemaVersion)
	}
	if len(m.Scenarios) == 0 {
		return nil, fmt.Errorf("run-order manifest lists no scenarios")
	}
	seen := map[string]int{}
	for i := range m.Scenarios {
		e := &m.Scenarios[i]
		if !idPattern.MatchString(e.ID) {
			return nil, fmt.Errorf("run-order manifest entry %d: id %q is not lower-case letters, digits and dashes", i+1, e.ID)
		}
		if !idPattern.MatchString(e.Series) {
			return nil, fmt.Errorf("run-order manifest entry %s: series %q is not lower-case letters, digits and dashes", e.ID, e.Series)
		}
		if prev, dup := seen[e.ID]; dup {
			return nil, fmt.Errorf("run-order manifest: id %s listed twice (entries %d and %d)", e.ID, prev, i+1)
		}
		seen[e.ID] = i + 1
		if e.Platform == "" {
			e.Platform = "any"
		}
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
