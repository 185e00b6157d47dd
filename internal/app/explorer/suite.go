package explorer

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Joining is how a generated scenario joins the suite, as its header comment tells a
// person: appended to the explored scenario's feature file, with its manifest entry right
// after the explored scenario's (so that it runs beside it, in its series).
type Joining struct {
	// ID is the generated scenario's manifest id and tag: <explored id>-schedule-<n>.
	ID string `json:"id"`
	// Explored is the explored scenario's id, whose manifest entry the new one follows.
	Explored string `json:"explored"`
	// Feature is the explored scenario's feature file inside the features directory
	// (slash separated); "" when the source did not say.
	Feature string `json:"feature,omitempty"`
	// Entry is the manifest entry, one flow-style list item.
	Entry string `json:"entry"`
}

func joiningOf(src GherkinSource, n int) Joining {
	id := fmt.Sprintf("%s-schedule-%d", src.ID, n)
	needs := append(slices.Clone(src.Needs), "fault-proxy") // its barriers
	slices.Sort(needs)
	needs = slices.Compact(needs)
	return Joining{ID: id, Explored: src.ID, Feature: src.Path,
		Entry: fmt.Sprintf("- {id: %s, series: %s, needs: [%s]}", id, src.Series, strings.Join(needs, ", "))}
}

func (j Joining) featureName() string {
	if j.Feature == "" {
		return j.Explored + "'s feature file"
	}
	return "features/" + j.Feature
}

// AddToSuite copies the features directory features (feature files, manifest, fixtures,
// gates) to dst, which must not exist, and adds the generated scenario text to the copy the
// way its header comment says — what a person adding it to the suite does — so that
// `flowtest run --features dst --tags @<j.ID>` runs it. It refuses what a person could not
// follow: no feature file named, or no manifest entry of the explored scenario to follow.
func AddToSuite(features, dst string, j Joining, text string) error {
	if j.Feature == "" {
		return fmt.Errorf("the generated scenario %s names no feature file to join", j.ID)
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s exists already", dst)
	}
	if err := os.CopyFS(dst, os.DirFS(features)); err != nil {
		return fmt.Errorf("copy %s: %w", features, err)
	}
	// The copy is run on the sandbox's reference model, to which no known product defect
	// applies, and the catalogue's evidence paths (relative to the repository) would not
	// resolve from it: the copy has no catalogue.
	if err := os.Remove(filepath.Join(dst, "known-defects.yaml")); err != nil && !os.IsNotExist(err) {
		return err
	}
	feature := filepath.Join(dst, filepath.FromSlash(path.Clean(j.Feature)))
	old, err := os.ReadFile(feature)
	if err != nil {
		return fmt.Errorf("the explored scenario's feature file: %w", err)
	}
	joined := strings.TrimRight(string(old), "\r\n \t") + "\n\n" + text
	if err := os.WriteFile(feature, []byte(joined), 0o644); err != nil {
		return err
	}
	manifest := filepath.Join(dst, "manifest.yaml")
	data, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	out, err := insertEntry(string(data), j)
	if err != nil {
		return err
	}
	return os.WriteFile(manifest, []byte(out), 0o644)
}

// insertEntry puts j's entry on the line after the explored scenario's flow-style entry,
// at its indentation.
func insertEntry(manifest string, j Joining) (string, error) {
	entry := regexp.MustCompile(`^(\s*)-\s*\{\s*id:\s*` + regexp.QuoteMeta(j.Explored) + `\s*,`)
	lines := strings.SplitAfter(manifest, "\n")
	for i, l := range lines {
		m := entry.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if !strings.HasSuffix(l, "\n") {
			lines[i] += "\n"
		}
		lines = slices.Insert(lines, i+1, m[1]+j.Entry+"\n")
		return strings.Join(lines, ""), nil
	}
	return "", fmt.Errorf("manifest.yaml has no one-line entry {id: %s, …} to put %s after", j.Explored, j.ID)
}
