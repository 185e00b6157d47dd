package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/base/yamlerr"
	"github.com/ksqlflow/flowtest/internal/results"
)

// KnownDefectsFile is the catalogue of known product defects, beside the manifest in the
// features directory.
const KnownDefectsFile = "known-defects.yaml"

// The keys the catalogue may hold; anything else is refused.
var (
	knownDefectsKeys = []string{"schema_version", "defects"}
	knownDefectKeys  = []string{"id", "package", "version", "scenario", "assertion", "evidence", "summary"}
	kpdID            = regexp.MustCompile(`^KPD-[1-9][0-9]*$`)
)

// LoadKnownDefects reads the catalogue features/known-defects.yaml (features is the features
// directory as the operator gave it; errors name the file as path/known-defects.yaml:line).
// Evidence paths are relative to the repository root, the features directory's parent. A
// missing file is an empty catalogue.
func LoadKnownDefects(features string, m *Manifest) ([]results.KnownDefect, error) {
	name := filepath.Join(features, KnownDefectsFile)
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the known-defects catalogue: %w", err)
	}
	return ParseKnownDefects(name, data, m, os.DirFS(filepath.Join(features, "..")))
}

// ParseKnownDefects parses and validates catalogue text. Every error is one line starting
// with name and the line: it refuses YAML errors, unknown keys, a missing or empty field, an
// id that is not KPD-<n> or is listed twice, a scenario the manifest does not list, a second
// entry for the same scenario and product, and evidence that is not a file of repo (a
// relative path, optionally #anchor; a Markdown file must hold a heading or anchor of that
// name).
func ParseKnownDefects(name string, data []byte, m *Manifest, repo fs.FS) ([]results.KnownDefect, error) {
	at := func(line int, format string, a ...any) error {
		return fmt.Errorf("%s: %s", yamlerr.Where(name, line), fmt.Sprintf(format, a...))
	}
	doc, line, problem := yamlerr.OneMapping(data, yamlerr.Wording{
		Empty:          "the known-defects catalogue is empty (want schema_version: 1 and a defects list, [] for none)",
		Syntax:         "YAML: %s",
		SecondDocument: "a second YAML document: the known-defects catalogue is one document",
		NotMapping:     "the known-defects catalogue must be a mapping with schema_version and defects",
	})
	if problem != "" {
		return nil, at(line, "%s", problem)
	}
	root := doc.Content[0]
	if err := (yamlerr.Keys{Known: knownDefectsKeys, What: "key", Twice: true}).Check(root, at); err != nil {
		return nil, err
	}
	if v, _ := yamlerr.Value(root, "schema_version"); v == nil || v.Value != "1" {
		l := yamlerr.KeyLine(root, "schema_version")
		if l == 0 {
			l = root.Line
		}
		return nil, at(l, "schema_version must be 1")
	}
	list, key := yamlerr.Value(root, "defects")
	if list == nil {
		return nil, at(root.Line, "no defects list (write defects: [] for none)")
	}
	if list.Kind != yaml.SequenceNode {
		return nil, at(key.Line, "defects must be a list of entries")
	}
	var out []results.KnownDefect
	ids := map[string]int{}
	pairs := map[string]int{}
	for _, n := range list.Content {
		if n.Kind != yaml.MappingNode {
			return nil, at(n.Line, "a defect entry must be a mapping like {id: KPD-1, package: …, version: …, scenario: …, assertion: …, evidence: …, summary: …}")
		}
		if err := (yamlerr.Keys{Known: knownDefectKeys, What: "defect key", Twice: true}).Check(n, at); err != nil {
			return nil, err
		}
		var d results.KnownDefect
		for _, k := range knownDefectKeys {
			v, kn := yamlerr.Value(n, k)
			if v == nil {
				return nil, at(n.Line, "defect entry has no %s (every entry names %s)", k, strings.Join(knownDefectKeys, ", "))
			}
			if v.Kind != yaml.ScalarNode || strings.TrimSpace(v.Value) == "" {
				return nil, at(kn.Line, "%s must be a non-empty string", k)
			}
		}
		if err := n.Decode(&d); err != nil {
			l, msg := yamlerr.Line(err)
			return nil, at(l, "%s", msg)
		}
		line := func(k string) int { return yamlerr.KeyLine(n, k) }
		if !kpdID.MatchString(d.ID) {
			return nil, at(line("id"), "id %q is not KPD-<n> (n from 1, no leading zero)", d.ID)
		}
		if first, dup := ids[d.ID]; dup {
			return nil, at(line("id"), "id %s listed twice (first at line %d)", d.ID, first)
		}
		ids[d.ID] = line("id")
		if _, ok := m.Entry(d.Scenario); !ok {
			return nil, at(line("scenario"), "%s: scenario %q is not in the run-order manifest", d.ID, d.Scenario)
		}
		pair := d.Scenario + " " + d.Product()
		if first, dup := pairs[pair]; dup {
			return nil, at(line("scenario"), "%s: scenario %s already has a known defect on %s (line %d): one declared failure per scenario and product", d.ID, d.Scenario, d.Product(), first)
		}
		pairs[pair] = line("scenario")
		if err := checkEvidence(repo, d.Evidence); err != nil {
			return nil, at(line("evidence"), "%s: evidence %q: %v", d.ID, d.Evidence, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// checkEvidence: evidence is a relative, clean path of a file in repo, optionally with an
// #anchor, which a Markdown file must hold as a heading (GitHub's slug) or an explicit anchor.
func checkEvidence(repo fs.FS, ev string) error {
	p, anchor, hasAnchor := strings.Cut(ev, "#")
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || strings.HasPrefix(p, "../") || strings.Contains(p, "\\") {
		return fmt.Errorf("not a clean path relative to the repository root")
	}
	data, err := fs.ReadFile(repo, p)
	if err != nil {
		return fmt.Errorf("no such file in the repository")
	}
	if !hasAnchor {
		return nil
	}
	if anchor == "" {
		return fmt.Errorf("an empty #anchor")
	}
	if !strings.HasSuffix(p, ".md") {
		return fmt.Errorf("an #anchor needs a Markdown file")
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, `id="`+anchor+`"`) || strings.Contains(l, `name="`+anchor+`"`) {
			return nil
		}
		if h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " "); ok && strings.HasPrefix(l, "#") && slug(h) == anchor {
			return nil
		}
	}
	return fmt.Errorf("%s holds no heading or anchor %q", p, anchor)
}

// slug is GitHub's anchor of a Markdown heading: lower case, spaces to dashes, punctuation
// other than '-' and '_' dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
