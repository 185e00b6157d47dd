package flownet

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// Without a handler the platform's stop signal ends run-network at once (simple
// termination, what the original recorded for the Node CLI on Windows): the attempt and
// the Invocation stay RUNNING under a RUNNING Run and the operator recovers them with
// force-unlock-network and --resume-run orphan adjudication.
//
// closeRunOnStop is the planted defect stop-closes-run-only: a "graceful" stop
// handler that marks the Run FAILED with finished_at and exits, leaving its RUNNING node
// state and attempt under a terminal Run.
func (e *execution) closeRunOnStop() {
	if !defect.StopClosesRunOnly {
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sig
		now := isoMillis(e.c.now())
		_, _ = e.st.update(context.Background(), e.st.stateApp, e.run.Str("record_key"),
			vals(map[string]any{"status": StatusFailed, "finished_at": now, "updated_at": now}), e.runRev)
		os.Exit(1)
	}()
}

// closeInvocationOnStop is the planted defect stop-closes-invocation-only: a stop
// handler that closes the Invocation CANCELLED / STOP_REQUESTED with finished_at, as if it
// had drained, and exits without finalising the Attempt it was running: a finished
// Invocation owns a RUNNING Attempt (Run and node state stay RUNNING, as after a simple
// termination).
func (e *execution) closeInvocationOnStop() {
	if !defect.StopClosesInvocationOnly {
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sig
		_, _ = e.st.update(context.Background(), e.st.auditApp, "INV:"+e.invID,
			vals(map[string]any{"status": StatusCancelled, "result_code": CodeStopRequested,
				"finished_at": isoMillis(e.c.now()), "reason": e.invReason}), e.invRev)
		os.Exit(1)
	}()
}
