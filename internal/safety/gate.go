package safety

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// PendingRequest is one request-app record still waiting for (REQUESTED) or
// held by (ACCEPTED) a poller.
type PendingRequest struct {
	ID    string
	State string
}

// PendingReader lists the REQUESTED/ACCEPTED records of the request app.
// internal/harness/kintoneguard provides one over the read-only request token.
type PendingReader interface {
	PendingRequests(ctx context.Context, appID string) ([]PendingRequest, error)
}

// CheckPendingRequests is rule 9's read: in live mode, before a request-series
// scenario, the E2E request app must hold no REQUESTED or ACCEPTED record
// (another poller could act on it; the R2 gate once stopped on two leftover
// board requests). Call it only after Preflight passed. A read error fails
// the check: we cannot prove the app is quiet.
func CheckPendingRequests(ctx context.Context, in Input, r PendingReader) Check {
	c := Check{Name: "pending-requests", Subject: VarAppReq}
	switch {
	case in.Target != TargetLive:
		c.OK, c.Reason = true, "not applicable in sandbox mode (fresh emulator)"
		return c
	case !in.needsRequest():
		c.OK, c.Reason = true, "not applicable: no request-series scenario selected"
		return c
	case r == nil:
		c.Reason = "no reader to check the request app with"
		return c
	}
	app, _ := in.app(RoleRequest)
	if err := canonicalAppID(app.Value); err != nil {
		c.Reason = fmt.Sprintf("request app id %v", err)
		return c
	}
	pending, err := r.PendingRequests(ctx, app.Value)
	if err != nil {
		c.Reason = fmt.Sprintf("could not read pending requests: %v", err)
		return c
	}
	if len(pending) > 0 {
		parts := make([]string, 0, len(pending))
		for _, p := range pending {
			parts = append(parts, fmt.Sprintf("#%s %s", p.ID, p.State))
		}
		c.Reason = fmt.Sprintf("request app %s holds %d REQUESTED/ACCEPTED record(s) (%s); another poller could act on them — resolve or remove them first", app.Value, len(pending), strings.Join(parts, ", "))
		return c
	}
	c.OK, c.Reason = true, fmt.Sprintf("request app %s holds no REQUESTED/ACCEPTED record", app.Value)
	return c
}

// ErrRefused is returned by Gate when any check failed.
var ErrRefused = errors.New("safety preflight refused the run")

// Plan injects the steps Gate sequences.
type Plan struct {
	// Resolve (sandbox only) starts the emulator and reports its settings.
	// nil in sandbox mode defers the target checks (`flowtest check`).
	Resolve func(ctx context.Context) (Resolved, error)
	// Pending (live only) reads the request app for rule 9.
	Pending PendingReader
	// Start runs the scenarios; called only when every check passed. nil
	// means check only.
	Start func(ctx context.Context, in Input) error
}

// Gate runs the documented order (see the package doc): static checks;
// sandbox: Resolve, then CheckTarget; live: CheckPendingRequests; then Start.
// Each phase runs only if every earlier check passed. It returns the report
// of all checks run, and ErrRefused (wrapped with the first violation) when
// any failed, an error from Resolve or Start otherwise.
func Gate(ctx context.Context, in Input, p Plan) (Report, error) {
	rep := Preflight(in)
	if !rep.OK() {
		return rep, refused(rep)
	}
	resolved := in
	switch in.Target {
	case TargetSandbox:
		if p.Resolve == nil {
			rep.pass("target-resolved", "sandbox", "deferred: checked when the emulator has started")
			break
		}
		r, err := p.Resolve(ctx)
		if err != nil {
			return rep, fmt.Errorf("resolve sandbox target: %w", err)
		}
		resolved = in.WithResolved(r)
		rep = rep.Merge(CheckTarget(resolved))
		if !rep.OK() {
			return rep, refused(rep)
		}
	case TargetLive:
		rep.Checks = append(rep.Checks, CheckPendingRequests(ctx, in, p.Pending))
		if !rep.OK() {
			return rep, refused(rep)
		}
	}
	if p.Start == nil {
		return rep, nil
	}
	if err := p.Start(ctx, resolved); err != nil {
		return rep, err
	}
	return rep, nil
}

func refused(rep Report) error {
	v := rep.Violations()
	return fmt.Errorf("%w: %d violation(s), first: %s %s: %s", ErrRefused, len(v), v[0].Name, v[0].Subject, v[0].Reason)
}
