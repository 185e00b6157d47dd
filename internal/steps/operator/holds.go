package operator

import (
	"context"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// holdDomain: the operator's `cancel-run` of the current run: a stop request (the hold) and
// its release, each with a reason file of the scope.
type holdDomain struct{}

func (d holdDomain) register(reg stepdef.Registry) {
	reg.Step(`^the operator requests a stop of the run as "([^"]+)"$`, d.requestsAStop)
	reg.Step(`^the operator releases the hold of the run as "([^"]+)"$`, d.releasesTheHold)
}

func cancelRun(ctx context.Context, name string, release bool) error {
	c, err := StartCancelRun(ctx, name, release)
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}

// StartCancelRun starts the STOP (or RELEASE) of the current run without waiting for it.
func StartCancelRun(ctx context.Context, name string, release bool) (*kit.FlownetCall, error) {
	id, err := kit.CurrentRunID(ctx)
	if err != nil {
		return nil, err
	}
	args := []string{"--run-id", id, "--reason-file", "@reason"}
	text := "stop requested by " + kit.SceneOf(ctx).St.ID
	if release {
		args = append(args, "--release")
		text = "hold released by " + kit.SceneOf(ctx).St.ID
	}
	return kit.StartFlowNet(ctx, kit.FlownetSpec{Name: name, Sub: "cancel-run", Args: args,
		Files: map[string]string{"reason": kit.FixturesOf(ctx).Scope().Reason(text)}})
}

func (holdDomain) requestsAStop(ctx context.Context, name string) error {
	return cancelRun(ctx, name, false)
}

func (holdDomain) releasesTheHold(ctx context.Context, name string) error {
	return cancelRun(ctx, name, true)
}
