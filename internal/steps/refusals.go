package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
)

// refusalDomain: how any FlowNet call of a scenario is refused: exit 1 and an
// `Error [<CODE>]:` line on stderr (saying a text, if given), and what its stderr must not
// mention.
type refusalDomain struct{}

func (d refusalDomain) register(reg stepdef.Registry) {
	reg.Step(`^`+procRef+` is refused with "([A-Z_]+)"$`, d.isRefused)
	reg.Step(`^`+procRef+` is refused with "([A-Z_]+)" saying "([^"]+)"$`, d.isRefusedSaying)
	reg.Step(`^the stderr of `+procRef+` does not mention "([^"]+)"$`, d.stderrDoesNotMention)
}

// refused: the call exited 1 with an `Error [<code>]:` line on stderr (saying text, if given).
func refused(ctx context.Context, ref, code, text string) error {
	sc := sceneOf(ctx)
	c, err := processesOf(ctx).finishedFlownetRun(ctx, ref)
	if err != nil {
		return err
	}
	if err := sc.st.Equal("exit code of "+c.name, 1, c.result.ExitCode); err != nil {
		return fmt.Errorf("%w\nstdout: %s\nstderr: %s", err, c.stdout, c.stderr)
	}
	prefix := "Error [" + code + "]:"
	line := ""
	for _, l := range strings.Split(c.stderr, "\n") {
		if strings.HasPrefix(l, prefix) {
			line = l
			break
		}
	}
	if err := sc.st.Assert(fmt.Sprintf("stderr of %s has a line starting with %q", c.name, prefix), "such a line", firstLineOrNone(c.stderr), line != ""); err != nil {
		return err
	}
	if text == "" {
		return nil
	}
	return sc.st.Assert(fmt.Sprintf("the %s line of %s says %q", code, c.name, text), text, line, strings.Contains(line, text))
}

func (refusalDomain) isRefused(ctx context.Context, ref, code string) error {
	return refused(ctx, ref, code, "")
}

func (refusalDomain) isRefusedSaying(ctx context.Context, ref, code, text string) error {
	return refused(ctx, ref, code, text)
}

func (refusalDomain) stderrDoesNotMention(ctx context.Context, ref, text string) error {
	c, err := processesOf(ctx).finishedFlownetRun(ctx, ref)
	if err != nil {
		return err
	}
	return sceneOf(ctx).st.Assert(fmt.Sprintf("stderr of %s mentions %q", c.name, text), "no", orNone(c.stderr), !strings.Contains(c.stderr, text))
}
