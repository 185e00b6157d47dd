package runner

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/cucumber/godog"
)

// Feature is one scenario found in a feature file.
type Feature struct {
	ID       string // the manifest id, found as a tag @<id>
	Path     string // feature file path inside the features FS
	Line     int64  // line of the Scenario keyword
	Name     string // scenario name
	Feature  string // feature name
	Tags     []string
	StepText []string // "Given …" lines, for dry runs and pre-filled step records
}

// Discover parses every .feature file under root in fsys and maps each scenario to the
// manifest entry whose id it carries as a tag. A scenario that carries no manifest id, or
// an id that two scenarios carry, is an error: the manifest is the one list of what exists.
func Discover(fsys fs.FS, root string, m *Manifest) (map[string]*Feature, error) {
	var paths []string
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".feature") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find feature files under %s: %w", root, err)
	}
	sort.Strings(paths)
	found := map[string]*Feature{}
	if len(paths) == 0 {
		return found, nil
	}
	suite := godog.TestSuite{Options: &godog.Options{FS: fsys, Paths: paths, Strict: true}}
	feats, err := suite.RetrieveFeatures()
	if err != nil {
		return nil, fmt.Errorf("parse feature files: %w", err)
	}
	known := map[string]bool{}
	for _, e := range m.Scenarios {
		known[e.ID] = true
	}
	for _, ft := range feats {
		for _, p := range ft.Pickles {
			var tags []string
			var ids []string
			for _, t := range p.Tags {
				tags = append(tags, t.Name)
				if known[strings.TrimPrefix(t.Name, "@")] {
					ids = append(ids, strings.TrimPrefix(t.Name, "@"))
				}
			}
			sc := ft.FindScenario(p.AstNodeIds[0])
			where := fmt.Sprintf("%s:%d", ft.Uri, sc.Location.Line)
			switch len(ids) {
			case 0:
				return nil, fmt.Errorf("%s: scenario %q carries no tag naming a manifest id (add @<id> and list the id in features/manifest.yaml)", where, p.Name)
			case 1:
			default:
				return nil, fmt.Errorf("%s: scenario %q carries several manifest ids: %s", where, p.Name, strings.Join(ids, ", "))
			}
			id := ids[0]
			if prev, dup := found[id]; dup {
				return nil, fmt.Errorf("%s: scenario id %s is already used at %s:%d", where, id, prev.Path, prev.Line)
			}
			f := &Feature{ID: id, Path: ft.Uri, Line: sc.Location.Line, Name: p.Name, Feature: ft.GherkinDocument.Feature.Name, Tags: tags}
			for _, st := range sc.Steps {
				f.StepText = append(f.StepText, strings.TrimSpace(st.Keyword)+" "+st.Text)
			}
			found[id] = f
		}
	}
	return found, nil
}
