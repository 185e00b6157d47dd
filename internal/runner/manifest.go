// Package runner drives godog: it discovers the feature files, orders the scenarios by the
// run-order manifest, selects them with Cucumber tag expressions, runs them one at a time
// with per-step deadlines, panic-safe cleanup and interrupt handling, and streams a record
// of every scenario to the results archive as soon as it ends.
package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/base/yamlerr"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
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
	// Explore, when set, makes the scenario explorable by `flowtest explore`: the FlowNet
	// processes whose kintone writes are scheduled.
	Explore *Explore `yaml:"explore"`
	// InvariantExemptions are the invariants of the contract (§8, internal/harness/schedule) that
	// cannot hold for this scenario by design — a fault it injects breaks them — each with
	// its reason. `flowtest run` checks every other invariant after the scenario's steps; an
	// exempted one is noted, and noted stale when it held anyway.
	InvariantExemptions map[string]string `yaml:"invariant_exemptions"`
	// Extended: the entry's series is one of the manifest's extended series (beyond the
	// acceptance scenarios of the product's release list); set by ParseManifest.
	Extended bool `yaml:"-"`
}

// Explore names the FlowNet processes of a race scenario (as its feature names them, e.g.
// "poller A") whose writes `flowtest explore` holds and orders — or, for a scenario that
// cannot be explored as written (its barriers force one order and its assertions hold only
// in that order), the explorable scenario `flowtest explore <id>` runs instead (Via, its
// free-race sibling) and why (Reason). An entry has Processes or Via, never both.
type Explore struct {
	Processes []string `yaml:"processes"`
	Via       string   `yaml:"via"`
	Reason    string   `yaml:"reason"`
}

// Explorable: the entry's own processes can be explored (not a redirect).
func (e Entry) Explorable() bool { return e.Explore != nil && len(e.Explore.Processes) > 0 }

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
	SchemaVersion int `yaml:"schema_version"`
	// Extended names the series that are not acceptance scenarios of the product's release
	// list but flowtest's own extended scenarios (faults and orders the original could only
	// unit-test). They run after every acceptance scenario, and list, records and gates show
	// them apart.
	Extended  []string `yaml:"extended"`
	Scenarios []Entry  `yaml:"scenarios"`
}

// Acceptance counts the manifest's acceptance scenarios (those not in an extended series).
func (m *Manifest) Acceptance() int {
	n := 0
	for _, e := range m.Scenarios {
		if !e.Extended {
			n++
		}
	}
	return n
}

var (
	idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	// accPattern: acceptance numbers become tags (@acc-<n>), so they must be tag-safe.
	accPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// The keys the manifest may hold; anything else is a typo that would otherwise be dropped.
var (
	manifestKeys = []string{"schema_version", "extended", "scenarios"}
	entryKeys    = []string{"id", "series", "acceptance", "needs", "limits", "explore", "invariant_exemptions"}
	exploreKeys  = []string{"processes", "via", "reason"}
)

// LoadManifest reads and validates the manifest at path in fsys; errors name path.
func LoadManifest(fsys fs.FS, path string) (*Manifest, error) {
	data, err := fs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("read run-order manifest: %w", err)
	}
	return ParseManifest(path, data)
}

// ParseManifest parses and validates manifest text. Every error is one line starting with
// name (the file) and, where there is one, the line: "features/manifest.yaml:12: …". It
// refuses YAML syntax errors, a second YAML document, unknown keys, values of the wrong type,
// a missing or malformed id or series, an id listed twice, an id that is also a series name
// (its tag would select both), acceptance numbers that cannot be tags or are listed twice,
// and unknown or repeated needs.
func ParseManifest(name string, data []byte) (*Manifest, error) {
	at := func(line int, format string, a ...any) error {
		return fmt.Errorf("%s: %s", yamlerr.Where(name, line), fmt.Sprintf(format, a...))
	}
	doc, line, problem := yamlerr.OneMapping(data, yamlerr.Wording{
		Empty:          "the run-order manifest is empty (want schema_version: 1 and a scenarios list)",
		Syntax:         "YAML: %s",
		SecondDocument: "a second YAML document: the run-order manifest is one document",
		NotMapping:     "the run-order manifest must be a mapping with schema_version and scenarios",
	})
	if problem != "" {
		return nil, at(line, "%s", problem)
	}
	root := doc.Content[0]
	if err := (yamlerr.Keys{Known: manifestKeys, What: "key", Hint: platformHint}).Check(root, at); err != nil {
		return nil, err
	}
	scen, _ := yamlerr.Value(root, "scenarios")
	if err := checkEntryKeys(scen, at); err != nil {
		return nil, err
	}

	var m Manifest
	if err := root.Decode(&m); err != nil {
		var ne *needError
		if errors.As(err, &ne) {
			return nil, at(ne.line, "%s", ne.msg)
		}
		line, msg := yamlerr.Line(err)
		return nil, at(line, "%s", msg)
	}
	if m.SchemaVersion != 1 {
		return nil, at(yamlerr.KeyLine(root, "schema_version"), "schema_version %d, want 1", m.SchemaVersion)
	}
	if len(m.Scenarios) == 0 {
		return nil, at(yamlerr.KeyLine(root, "scenarios"), "the run-order manifest lists no scenarios")
	}
	// Decoding succeeded with scenarios, so scen is their sequence, one node per entry.
	seen := map[string]int{}   // id -> line
	series := map[string]int{} // series -> line of its first entry
	for i := range m.Scenarios {
		if err := checkEntry(&m.Scenarios[i], i, scen.Content[i], seen, series, at); err != nil {
			return nil, err
		}
	}
	if err := checkRedirects(&m, scen, at); err != nil {
		return nil, err
	}
	if err := markExtended(&m, root, scen, series, at); err != nil {
		return nil, err
	}
	// @<id> and @<series> share one tag space: an id that is also a series would make its
	// tag select a whole series.
	for i, e := range m.Scenarios {
		if l, clash := series[e.ID]; clash {
			n := scen.Content[i]
			return nil, at(yamlerr.KeyLine(n, "id"), "id %s is also the name of a series (line %d): @%s would select both", e.ID, l, e.ID)
		}
	}
	return &m, nil
}

// checkEntryKeys refuses, before decoding, a scenario entry that is not a mapping and unknown
// keys in an entry or its explore mapping, and checks invariant_exemptions.
func checkEntryKeys(scen *yaml.Node, at func(int, string, ...any) error) error {
	if scen == nil || scen.Kind != yaml.SequenceNode {
		return nil
	}
	for _, e := range scen.Content {
		if e.Kind != yaml.MappingNode {
			return at(e.Line, "a scenario entry must be a mapping like {id: …, series: …}")
		}
		if err := (yamlerr.Keys{Known: entryKeys, What: "scenario key", Hint: platformHint}).Check(e, at); err != nil {
			return err
		}
		if x, _ := yamlerr.Value(e, "explore"); x != nil {
			if x.Kind != yaml.MappingNode {
				return at(x.Line, "explore must be a mapping like {processes: [poller A, poller B]}")
			}
			if err := (yamlerr.Keys{Known: exploreKeys, What: "explore key", Hint: platformHint}).Check(x, at); err != nil {
				return err
			}
		}
		if x, _ := yamlerr.Value(e, "invariant_exemptions"); x != nil {
			if err := checkExemptions(x, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkEntry validates the decoded entry i (node n): id and series, an id not listed
// before, acceptance numbers and its explore settings. It records the entry's id in seen
// and its series, when new, in series.
func checkEntry(e *Entry, i int, n *yaml.Node, seen, series map[string]int, at func(int, string, ...any) error) error {
	line := func(key string) int {
		if l := yamlerr.KeyLine(n, key); l > 0 {
			return l
		}
		return n.Line
	}
	switch {
	case e.ID == "":
		return at(n.Line, "scenario entry %d has no id", i+1)
	case !idPattern.MatchString(e.ID):
		return at(line("id"), "id %q is not lower-case letters, digits and dashes", e.ID)
	case strings.HasPrefix(e.ID, "acc-"):
		return at(line("id"), "id %q starts with acc-, which is the prefix of acceptance tags", e.ID)
	case e.Series == "":
		return at(n.Line, "scenario %s has no series", e.ID)
	case !idPattern.MatchString(e.Series):
		return at(line("series"), "scenario %s: series %q is not lower-case letters, digits and dashes", e.ID, e.Series)
	case strings.HasPrefix(e.Series, "acc-"):
		return at(line("series"), "scenario %s: series %q starts with acc-, which is the prefix of acceptance tags", e.ID, e.Series)
	}
	if prev, dup := seen[e.ID]; dup {
		return at(line("id"), "id %s listed twice (first at line %d)", e.ID, prev)
	}
	seen[e.ID] = line("id")
	if _, ok := series[e.Series]; !ok {
		series[e.Series] = line("series")
	}
	accs := map[string]bool{}
	for _, a := range e.Acceptance {
		if !accPattern.MatchString(a) {
			return at(line("acceptance"), "scenario %s: acceptance %q cannot be a tag (@acc-%s): use letters, digits, '.', '_' and '-'", e.ID, a, a)
		}
		if accs[a] {
			return at(line("acceptance"), "scenario %s: acceptance %q listed twice", e.ID, a)
		}
		accs[a] = true
	}
	if e.Explore != nil {
		return checkExplore(e.ID, e.Explore, line("explore"), at)
	}
	return nil
}

// checkExplore validates an entry's explore settings (at line l): its own processes, each
// named once, or a redirect via another scenario with a reason.
func checkExplore(id string, x *Explore, l int, at func(int, string, ...any) error) error {
	switch {
	case len(x.Processes) > 0 && x.Via != "":
		return at(l, "scenario %s: explore has processes and via: either its own processes are explored or another scenario is, not both", id)
	case x.Via != "" && strings.TrimSpace(x.Reason) == "":
		return at(l, "scenario %s: explore via %s needs a reason (why this scenario is not explored itself)", id, x.Via)
	case x.Via == "" && x.Reason != "":
		return at(l, "scenario %s: explore reason without via: a reason says why the exploration is redirected", id)
	case len(x.Processes) == 0 && x.Via == "":
		return at(l, "scenario %s: explore names no processes (and no via)", id)
	}
	procs := map[string]bool{}
	for _, p := range x.Processes {
		if strings.TrimSpace(p) == "" || procs[p] {
			return at(l, "scenario %s: explore process %q is empty or listed twice", id, p)
		}
		procs[p] = true
	}
	return nil
}

// checkRedirects refuses an explore via that does not name an entry explorable itself:
// no chains, no loops.
func checkRedirects(m *Manifest, scen *yaml.Node, at func(int, string, ...any) error) error {
	for i, e := range m.Scenarios {
		if e.Explore == nil || e.Explore.Via == "" {
			continue
		}
		l := yamlerr.KeyLine(scen.Content[i], "explore")
		to, ok := m.Entry(e.Explore.Via)
		switch {
		case e.Explore.Via == e.ID:
			return at(l, "scenario %s: explore via itself", e.ID)
		case !ok:
			return at(l, "scenario %s: explore via %s: no such scenario in the manifest", e.ID, e.Explore.Via)
		case !to.Explorable():
			return at(l, "scenario %s: explore via %s, which is not explorable itself (its entry declares no explore processes)", e.ID, to.ID)
		}
	}
	return nil
}

// markExtended sets Extended on the entries of the extended series, which must be known
// series listed once, and refuses an extended entry before the last acceptance entry.
func markExtended(m *Manifest, root, scen *yaml.Node, series map[string]int, at func(int, string, ...any) error) error {
	extended := map[string]bool{}
	for _, x := range m.Extended {
		l := yamlerr.KeyLine(root, "extended")
		switch _, ok := series[x]; {
		case !ok:
			return at(l, "extended series %q has no scenario in the manifest", x)
		case extended[x]:
			return at(l, "extended series %q listed twice", x)
		}
		extended[x] = true
	}
	lastAcceptance := -1
	for i := range m.Scenarios {
		m.Scenarios[i].Extended = extended[m.Scenarios[i].Series]
		if !m.Scenarios[i].Extended {
			lastAcceptance = i
		}
	}
	for i := 0; i < lastAcceptance; i++ {
		if e := m.Scenarios[i]; e.Extended {
			return at(yamlerr.KeyLine(scen.Content[i], "id"), "scenario %s of the extended series %s comes before the acceptance scenario %s: extended series run after every acceptance scenario", e.ID, e.Series, m.Scenarios[lastAcceptance].ID)
		}
	}
	return nil
}

// checkExemptions refuses an invariant_exemptions value that is not a mapping of known
// invariant names to non-empty reasons, at the line of the offending name.
func checkExemptions(x *yaml.Node, at func(int, string, ...any) error) error {
	if x.Kind != yaml.MappingNode {
		return at(x.Line, "invariant_exemptions must be a mapping of invariant names to reasons, like {puts-fenced: \"why it cannot hold here\"}")
	}
	for i := 0; i+1 < len(x.Content); i += 2 {
		k, v := x.Content[i], x.Content[i+1]
		switch {
		case !schedule.Known(k.Value):
			return at(k.Line, "invariant_exemptions: unknown invariant %q (the invariants: %s)", k.Value, strings.Join(schedule.Names(), ", "))
		case v.Kind != yaml.ScalarNode || v.Tag != "!!str" && v.Tag != "" || strings.TrimSpace(v.Value) == "":
			return at(k.Line, "invariant_exemptions: %s needs a reason (why the invariant cannot hold for this scenario)", k.Value)
		}
	}
	return nil
}

// platformHint: a platform is a need, not a key of its own.
func platformHint(key string) string {
	if key == "platform" {
		return "; a platform is declared as needs: [windows]"
	}
	return ""
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
