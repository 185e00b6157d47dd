package operator

import (
	"context"
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// refusalDomain: how any FlowNet call of a scenario is refused: exit 1 and an
// `Error [<CODE>]:` line on stderr (saying a text, if given), and what its stderr must not
// mention.
type refusalDomain struct{}

func (d refusalDomain) register(reg stepdef.Registry) {
	reg.Step(`^`+kit.ProcRef+` is refused with "([A-Z_]+)"$`, d.isRefused)
	reg.Step(`^`+kit.ProcRef+` is refused with "([A-Z_]+)" saying "([^"]+)"$`, d.isRefusedSaying)
	reg.Step(`^the stderr of `+kit.ProcRef+` does not mention "([^"]+)"$`, d.stderrDoesNotMention)
}

// refused: the call exited 1 with an `Error [<code>]:` line on stderr (saying text, if given).
func refused(ctx context.Context, ref, code, text string) error {
	sc := kit.SceneOf(ctx)
	c, err := kit.ProcessesOf(ctx).FinishedFlownetRun(ctx, ref)
	if err != nil {
		return err
	}
	if err := sc.St.On(c.ExitSubject()).Equal("exit code of "+c.Name, 1, c.Result.ExitCode); err != nil {
		return fmt.Errorf("%w\nstdout: %s\nstderr: %s", err, c.Stdout, c.Stderr)
	}
	prefix := "Error [" + code + "]:"
	line := ""
	for _, l := range strings.Split(c.Stderr, "\n") {
		if strings.HasPrefix(l, prefix) {
			line = l
			break
		}
	}
	if err := sc.St.On("text.any:\"Error [\"").Assert(fmt.Sprintf("stderr of %s has a line starting with %q", c.Name, prefix), "such a line", kit.FirstLineOrNone(c.Stderr), line != ""); err != nil {
		return err
	}
	if text == "" {
		return nil
	}
	return sc.St.On("text.any:\"Error [\"").Assert(fmt.Sprintf("the %s line of %s says %q", code, c.Name, text), text, line, strings.Contains(line, text))
}

func (refusalDomain) isRefused(ctx context.Context, ref, code string) error {
	return refused(ctx, ref, code, "")
}

func (refusalDomain) isRefusedSaying(ctx context.Context, ref, code, text string) error {
	return refused(ctx, ref, code, text)
}

func (refusalDomain) stderrDoesNotMention(ctx context.Context, ref, text string) error {
	c, err := kit.ProcessesOf(ctx).FinishedFlownetRun(ctx, ref)
	if err != nil {
		return err
	}
	return kit.SceneOf(ctx).St.On("text.any:\"Error [\"").Assert(fmt.Sprintf("stderr of %s mentions %q", c.Name, text), "no", kit.OrNone(c.Stderr), !strings.Contains(c.Stderr, text))
}
