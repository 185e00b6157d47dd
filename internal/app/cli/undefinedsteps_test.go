package cli

// Issue 42, item 11: a step no definition matches is refused by the preflight before the
// first scenario starts, on run, run --dry-run and check alike.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// An undefined step is refused by the preflight (check steps-defined) before anything
// starts: run, run --dry-run and check all exit 2 naming the feature line and the step.
func TestUndefinedStepsAreRefusedBeforeTheFirstScenario(t *testing.T) {
	// network-success.yaml is on the allow-list: the undefined step is the only thing wrong.
	features, _ := hostileSuite(t, "Feature: a\n  @a @s @acc-1\n  Scenario: a\n    Given the network fixture \"network-success.yaml\"\n    Then the moon is made of cheese\n")
	for _, args := range [][]string{{"run"}, {"run", "--dry-run"}, {"check"}} {
		t.Run(args[len(args)-1], func(t *testing.T) {
			r, work, out := refusedRun(t, append(args, "--features", features))
			all := r.stdout + r.stderr
			assert.Equal(t, 2, r.code, all)
			assert.Contains(t, all, "steps-defined")
			assert.Contains(t, all, "x/a.feature:5")
			assert.Contains(t, all, `scenario a: step "Then the moon is made of cheese" matches no step definition`)
			for _, line := range strings.Split(all, "\n") {
				if strings.HasPrefix(line, "FAIL") {
					assert.Contains(t, line, "steps-defined", "the only refusal is the undefined step")
				}
			}
			assertNothingStarted(t, all, work, out)
		})
	}
}
