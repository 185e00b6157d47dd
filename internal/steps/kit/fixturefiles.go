package kit

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/scope"
)

// The step expressions that read a file of features/fixtures. Their domains register these
// constants, and FixtureRefs matches a scenario's steps against the same expressions, so the
// preflight resolves each file argument exactly as the step receives it
// (fixturefiles_test.go checks that every quoted .yaml/.sql argument of the features is seen).
const (
	exprNetworkFixture             = `^the network fixture "([^"]+)"$`
	exprNetworkFixtureWithSwap     = `^the network fixture "([^"]+)" with node "([^"]+)" running "([^"]+)"$`
	exprNetworkFixtureInSubScope   = `^the network fixture "([^"]+)" in a fresh sub-scope "([^"]+)"$`
	exprNetworkFixtureAs           = `^the network fixture "([^"]+)" as network "([^"]+)"$`
	ExprCSVFixture                 = `^the network fixture "([^"]+)" for the scope's CSV rows in "(UTF8|SJIS)"$`
	ExprCSVFixtureAs               = `^the network fixture "([^"]+)" for the scope's CSV rows in "(UTF8|SJIS)" as network "([^"]+)"$`
	ExprCSVFixtureInSubScope       = `^the network fixture "([^"]+)" for the scope's CSV rows in "(UTF8|SJIS)" in a fresh sub-scope "([^"]+)"$`
	ExprCSVFixtureInSubScopeAs     = `^the network fixture "([^"]+)" for the scope's CSV rows in "(UTF8|SJIS)" in a fresh sub-scope "([^"]+)" as network "([^"]+)"$`
	ExprRunWhileHolderHoldsLock    = `^FlowNet runs the network while the holder, a standalone kSQL-Flow, holds the job lock of node "([^"]+)" with "([^"]+)"$`
	ExprResumeWhileHolderHoldsLock = `^FlowNet resumes the run by its id as "([^"]+)" while the holder, a standalone kSQL-Flow, holds the job lock of node "([^"]+)" with "([^"]+)"$`
)

// FixtureExprsAbove are the expressions of fixtureSteps that groups above the kit register
// (the CSV fixture steps, the lock conflict's holder): they share them so the preflight and
// the step cannot drift apart.
var FixtureExprsAbove = []string{ExprCSVFixture, ExprCSVFixtureAs, ExprCSVFixtureInSubScope, ExprCSVFixtureInSubScopeAs,
	ExprRunWhileHolderHoldsLock, ExprResumeWhileHolderHoldsLock}

// fixtureArg is a capture group of a step expression that names a fixture file of a kind.
type fixtureArg struct {
	group int
	kind  scope.FixtureKind
}

type fixtureStep struct {
	re   *regexp.Regexp
	args []fixtureArg
}

var fixtureSteps = func() []fixtureStep {
	net := []fixtureArg{{1, scope.FixtureNetworks}}
	table := []struct {
		expr string
		args []fixtureArg
	}{
		{exprNetworkFixture, net},
		{exprNetworkFixtureWithSwap, []fixtureArg{{1, scope.FixtureNetworks}, {3, scope.FixtureJobs}}},
		{exprNetworkFixtureInSubScope, net},
		{exprNetworkFixtureAs, net},
		{ExprCSVFixture, net},
		{ExprCSVFixtureAs, net},
		{ExprCSVFixtureInSubScope, net},
		{ExprCSVFixtureInSubScopeAs, net},
		{ExprRunWhileHolderHoldsLock, []fixtureArg{{2, scope.FixtureJobs}}},
		{ExprResumeWhileHolderHoldsLock, []fixtureArg{{3, scope.FixtureJobs}}},
	}
	out := make([]fixtureStep, 0, len(table))
	for _, t := range table {
		out = append(out, fixtureStep{re: regexp.MustCompile(t.expr), args: t.args})
	}
	return out
}()

// FixtureRef is one fixture file a scenario's step names, as the step receives it.
type FixtureRef struct {
	Kind scope.FixtureKind
	Name string // the argument, unchanged ("../x.yaml" stays so: resolving it is the check)
	Step string // the step line ("Given the network fixture …"), for refusals
	At   int    // index of that line in the scenario's steps
}

// FixtureRefs lists the fixture files a scenario's steps name (network fixtures and SQL
// files), each once per kind and argument, in step order, so the preflight can resolve,
// render and check them before anything runs. stepLines carry their keyword ("Given …").
func FixtureRefs(stepLines []string) []FixtureRef {
	var out []FixtureRef
	seen := map[FixtureRef]bool{}
	for at, line := range stepLines {
		_, text, _ := strings.Cut(strings.TrimSpace(line), " ") // godog matches without the keyword
		for _, fs := range fixtureSteps {
			m := fs.re.FindStringSubmatch(text)
			if m == nil {
				continue
			}
			for _, a := range fs.args {
				key := FixtureRef{Kind: a.kind, Name: m[a.group]}
				if !seen[key] {
					seen[key] = true
					out = append(out, FixtureRef{Kind: a.kind, Name: m[a.group], Step: strings.TrimSpace(line), At: at})
				}
			}
		}
	}
	return out
}

// FixtureFile resolves a fixture argument of a step through the resolver the preflight used
// (scope.ResolveFixture), so the step reads the file the preflight checked; a path that
// escapes its folder fails the step with the preflight's reason.
func (s *Suite) FixtureFile(kind scope.FixtureKind, name string) (scope.FixtureFile, error) {
	f, err := scope.ResolveFixture(s.FixturesDir, kind, name)
	if err != nil {
		return scope.FixtureFile{}, fmt.Errorf("refused: %w", err)
	}
	return f, nil
}

// sqlFolder is the folder every SQL file a rendered network names must resolve inside.
func (s *Suite) sqlFolder() string {
	return SQLFolder(s.FixturesDir)
}

// SQLFolder is the folder of SQL job files under fixturesDir, which confines the SQL a
// network fixture names (scope.RenderOptions.SQLFolder) for the steps and the preflight alike.
func SQLFolder(fixturesDir string) string {
	return filepath.Join(fixturesDir, string(scope.FixtureJobs))
}

// plainLabel refuses a network label that would lead its rendering out of the scenario's
// work dir: the label names a folder there ("network-<hash8>-<label>").
func plainLabel(label string) error {
	if strings.ContainsAny(label, `/\`+"\x00") {
		return fmt.Errorf("network label %q holds a path separator; a label names a folder in the scenario's work dir", label)
	}
	return nil
}
