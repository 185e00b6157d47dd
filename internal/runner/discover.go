package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

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
	// StepLines are the file lines of those steps (parallel to StepText; 0 when unknown), so a
	// refusal of a step names where it is written.
	StepLines []int64
	// Row is the line of the Examples row when the scenario is one row of a Scenario Outline
	// (each row, or each Examples block of one row, carries its own manifest id); else 0.
	Row int64
}

// Discover parses every .feature file under root in fsys and maps each scenario to the
// manifest entry whose id it carries as a tag. A scenario that carries no manifest id, or
// an id that two scenarios carry, is an error: the manifest is the one list of what exists.
// Errors name the file and line as paths inside fsys; DiscoverNamed prefixes them.
func Discover(fsys fs.FS, root string, m *Manifest) (map[string]*Feature, error) {
	return DiscoverNamed(fsys, root, m, "")
}

// DiscoverNamed is Discover with errors naming files as prefix/<path> (the features directory
// as the operator knows it, e.g. "features"), so that "features/m5/x.feature:5" can be opened.
// Every error is one line with file:line. Besides Discover's rules it refuses a feature file
// that does not parse (with gherkin's line and column), one that holds no scenario, and a
// scenario whose tags disagree with its manifest entry: each must carry the entry's @<series>
// and @acc-<n> tags (or `--tags @m5` would silently skip it) and no series or acceptance tag the
// entry does not declare (or it would be selected by someone else's tag).
func DiscoverNamed(fsys fs.FS, root string, m *Manifest, prefix string) (map[string]*Feature, error) {
	show := shownUnder(prefix)
	paths, err := featurePaths(fsys, root)
	if err != nil {
		return nil, fmt.Errorf("find feature files under %s: %w", show(root), err)
	}
	found := map[string]*Feature{}
	mt := newManifestTags(m)
	for _, file := range paths {
		data, err := readFeatureFile(fsys, file, show)
		if err != nil {
			return nil, err
		}
		// One file at a time, so that a parse error is attributed to its file.
		suite := godog.TestSuite{Options: &godog.Options{FS: fsys, Paths: []string{file}, Strict: true}}
		feats, err := suite.RetrieveFeatures()
		if err != nil {
			return nil, gherkinError(show(file), lastLine(data), err)
		}
		pickles := 0
		for _, ft := range feats {
			pickles += len(ft.Pickles)
		}
		if pickles == 0 {
			return nil, fmt.Errorf("%s: no scenario in this feature file (each scenario is one manifest entry; delete the file or add a Scenario)", show(file))
		}
		for _, ft := range feats {
			for _, p := range ft.Pickles {
				if len(p.AstNodeIds) == 0 {
					return nil, fmt.Errorf("%s: scenario %q has no source location", show(ft.Uri), p.Name)
				}
				sc := ft.FindScenario(p.AstNodeIds[0])
				if sc == nil {
					return nil, fmt.Errorf("%s: scenario %q has no source location", show(ft.Uri), p.Name)
				}
				where := fmt.Sprintf("%s:%d", show(ft.Uri), sc.Location.Line)
				var tags []string
				for _, t := range p.Tags {
					tags = append(tags, t.Name)
				}
				id, err := mt.scenarioID(where, p.Name, tags, found, show)
				if err != nil {
					return nil, err
				}
				f := &Feature{ID: id, Path: ft.Uri, Line: sc.Location.Line, Name: p.Name, Tags: tags}
				if ft.GherkinDocument != nil && ft.GherkinDocument.Feature != nil {
					f.Feature = ft.GherkinDocument.Feature.Name
				}
				// The pickle's steps, not the scenario's: in a Scenario Outline they carry the
				// row's values instead of <placeholders> (and the step records must match the
				// text godog reports); the keyword comes from the step in the file.
				for _, ps := range p.Steps {
					kw, line := "", int64(0)
					if len(ps.AstNodeIds) > 0 {
						if st := ft.FindStep(ps.AstNodeIds[0]); st != nil {
							kw = strings.TrimSpace(st.Keyword) + " "
							if st.Location != nil {
								line = st.Location.Line
							}
						}
					}
					f.StepText = append(f.StepText, kw+ps.Text)
					f.StepLines = append(f.StepLines, line)
				}
				if len(p.AstNodeIds) > 1 {
					// An Examples row: godog selects by the Outline's line, so the row is
					// picked by its id tag (Run), and its own line is kept for the reader.
					if _, row := ft.FindExample(p.AstNodeIds[1]); row != nil {
						f.Row = row.Location.Line
					}
				}
				found[id] = f
			}
		}
	}
	return found, nil
}

// shownUnder returns how errors name a path inside the features FS: as prefix/<path>, or
// as it is when prefix is empty.
func shownUnder(prefix string) func(string) string {
	return func(p string) string {
		if prefix == "" {
			return p
		}
		return path.Join(filepath.ToSlash(prefix), p)
	}
}

// featurePaths lists the .feature files under root, sorted.
func featurePaths(fsys fs.FS, root string) ([]string, error) {
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
		return nil, err
	}
	sort.Strings(paths)
	return paths, nil
}

// readFeatureFile reads a feature file and refuses what checkFeatureText refuses; errors
// name the file as show(file).
func readFeatureFile(fsys fs.FS, file string, show func(string) string) ([]byte, error) {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, fmt.Errorf("%s: read feature file: %w", show(file), err)
	}
	if err := checkFeatureText(data); err != nil {
		return nil, fmt.Errorf("%s:%w", show(file), err)
	}
	return data, nil
}

// manifestTags indexes the manifest by the tags its entries imply.
type manifestTags struct {
	known      map[string]Entry // by id
	seriesTags map[string]bool  // "@<series>"
	ids        []string         // "@<id>", manifest order, for the closest-id hint
}

func newManifestTags(m *Manifest) manifestTags {
	mt := manifestTags{known: map[string]Entry{}, seriesTags: map[string]bool{}}
	for _, e := range m.Scenarios {
		mt.known[e.ID] = e
		mt.ids = append(mt.ids, "@"+e.ID)
		mt.seriesTags["@"+e.Series] = true
	}
	return mt
}

// scenarioID returns the one manifest id among a scenario's tags, refusing an id already in
// found (shown with show) and tags that disagree with the entry; where (file:line) and name
// word the errors.
func (mt manifestTags) scenarioID(where, name string, tags []string, found map[string]*Feature, show func(string) string) (string, error) {
	var mine []string
	for _, t := range tags {
		if _, ok := mt.known[strings.TrimPrefix(t, "@")]; ok {
			mine = append(mine, strings.TrimPrefix(t, "@"))
		}
	}
	switch len(mine) {
	case 0:
		hint := ""
		var near []string
		for _, t := range tags {
			if !mt.seriesTags[t] && !strings.HasPrefix(t, "@acc-") {
				near = append(near, Closest(t, mt.ids, 1)...)
			}
		}
		if len(near) > 0 {
			hint = " (closest manifest id: " + strings.Join(slices.Compact(near), ", ") + ")"
		}
		return "", fmt.Errorf("%s: scenario %q carries no tag naming a manifest id (add @<id> and list the id in features/manifest.yaml)%s", where, name, hint)
	case 1:
	default:
		return "", fmt.Errorf("%s: scenario %q carries several manifest ids: %s", where, name, strings.Join(mine, ", "))
	}
	id := mine[0]
	if prev, dup := found[id]; dup {
		return "", fmt.Errorf("%s: scenario id %s is already used at %s:%d", where, id, show(prev.Path), prev.Line)
	}
	if err := checkEntryTags(mt.known[id], tags, mt.seriesTags); err != nil {
		return "", fmt.Errorf("%s: scenario %q (@%s): %v", where, name, id, err)
	}
	return id, nil
}

// checkEntryTags compares a scenario's tags with what its manifest entry implies.
func checkEntryTags(e Entry, tags []string, seriesTags map[string]bool) error {
	var missing, foreign []string
	for _, t := range e.Tags()[1:] { // [0] is @<id>, found already
		if !slices.Contains(tags, t) {
			missing = append(missing, t)
		}
	}
	implied := e.Tags()
	for _, t := range tags {
		if slices.Contains(implied, t) {
			continue
		}
		if seriesTags[t] || strings.HasPrefix(t, "@acc-") {
			foreign = append(foreign, t)
		}
	}
	switch {
	case len(missing) > 0:
		return fmt.Errorf("lacks %s, which its manifest entry implies (series %s, acceptance [%s]); without it a selection by that tag would skip this scenario", strings.Join(missing, " "), e.Series, strings.Join(e.Acceptance, ", "))
	case len(foreign) > 0:
		return fmt.Errorf("carries %s, which its manifest entry does not declare (series %s, acceptance [%s]); declare it in features/manifest.yaml or remove the tag", strings.Join(foreign, " "), e.Series, strings.Join(e.Acceptance, ", "))
	}
	return nil
}

var gherkinLoc = regexp.MustCompile(`^\((\d+):(\d+)\): (.*)$`)

// gherkinError turns godog's "x.feature - Parser errors:\n(5:3): expected: …" into one line,
// "features/x.feature:5:3: expected: …", with the number of further errors. Gherkin places
// "unexpected end of file" at column 0 of the line after the last (last: the file's last line):
// that is named as the last line, without a column.
func gherkinError(file string, last int, err error) error {
	var locs []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if m := gherkinLoc.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			line, _ := strconv.Atoi(m[1])
			where := fmt.Sprintf("%s:%s:%s", file, m[1], m[2])
			if line > last || m[2] == "0" {
				where = fmt.Sprintf("%s:%d", file, min(line, last))
			}
			locs = append(locs, where+": "+m[3])
		}
	}
	switch len(locs) {
	case 0:
		return fmt.Errorf("%s: parse feature file: %s", file, strings.Join(strings.Fields(err.Error()), " "))
	case 1:
		return errors.New(locs[0])
	default:
		return fmt.Errorf("%s (and %d more parse errors in this file)", locs[0], len(locs)-1)
	}
}

// checkFeatureText refuses, as "<line>: problem", what gherkin cannot read but would not
// refuse itself, or refuse only in words that hide the cause: a line longer than its scanner's
// buffer ends the scan with an error the parser dereferences as a nil line (a panic with no
// file named, issue 42); a byte order mark (UTF-8's becomes part of the first keyword, UTF-16
// is read as bytes); a NUL byte or bytes that are not UTF-8 (gherkin took them into the step
// text, where no step definition would ever match them as written).
func checkFeatureText(data []byte) error {
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		return errors.New("1: is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8")
	case bytes.HasPrefix(data, []byte("\ufeff")):
		return errors.New("1: starts with a byte order mark (U+FEFF), which gherkin does not read; save the file as UTF-8 without BOM")
	}
	line := 1
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n')
		if n < 0 {
			n = len(data)
		}
		text := data[:n]
		switch {
		case n > maxFeatureLine:
			return fmt.Errorf("%d: line is %d bytes long, over the %d bytes a feature file line may have (gherkin's limit); put long text in a fixture file or a doc string of several lines", line, n, maxFeatureLine)
		case bytes.IndexByte(text, 0) >= 0:
			return fmt.Errorf("%d: holds a NUL byte (is the file UTF-16?); feature files are UTF-8 text", line)
		case !utf8.Valid(text):
			return fmt.Errorf("%d: not valid UTF-8 (saved as Shift_JIS?); feature files are UTF-8", line)
		}
		if n == len(data) {
			break
		}
		data = data[n+1:]
		line++
	}
	return nil
}

// lastLine is the number of the last line of a text (1 for an empty one).
func lastLine(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) == 0 || data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// maxFeatureLine is the longest line, in bytes without its newline, that gherkin's scanner
// reads (bufio.MaxScanTokenSize less one: the buffer must also hold the newline, or see EOF).
const maxFeatureLine = bufio.MaxScanTokenSize - 1
