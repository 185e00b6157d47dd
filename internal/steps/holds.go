package steps

import (
	"context"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
)

// holdDomain: the operator's `cancel-run` of the current run: a stop request (the hold) and
// its release, each with a reason file of the scope.
type holdDomain struct{}

func (d holdDomain) register(reg stepdef.Registry) {
	reg.Step(`^the operator requests a stop of the run as "([^"]+)"$`, d.requestsAStop)
	reg.Step(`^the operator releases the hold of the run as "([^"]+)"$`, d.releasesTheHold)
}

func cancelRun(ctx context.Context, name string, release bool) error {
	c, err := startCancelRun(ctx, name, release)
	if err != nil {
		return err
	}
	return c.finish(ctx)
}

// startCancelRun starts the STOP (or RELEASE) of the current run without waiting for it.
func startCancelRun(ctx context.Context, name string, release bool) (*flownetCall, error) {
	id, err := currentRunID(ctx)
	if err != nil {
		return nil, err
	}
	args := []string{"--run-id", id, "--reason-file", "@reason"}
	text := "stop requested by " + sceneOf(ctx).st.ID
	if release {
		args = append(args, "--release")
		text = "hold released by " + sceneOf(ctx).st.ID
	}
	return startFlowNet(ctx, flownetSpec{Name: name, Sub: "cancel-run", Args: args,
		Files: map[string]string{"reason": fixturesOf(ctx).scope().Reason(text)}})
}

func (holdDomain) requestsAStop(ctx context.Context, name string) error {
	return cancelRun(ctx, name, false)
}

func (holdDomain) releasesTheHold(ctx context.Context, name string) error {
	return cancelRun(ctx, name, true)
}
