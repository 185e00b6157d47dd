package operator

import (
	"context"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// resolveDomain: the operator's `resolve-node` of an UNKNOWN or non-idempotent node of the
// current run: SUCCESS by manual completion, with evidence and (when named) an approver,
// and the ATTEMPT_RESOLUTION audit compared with what the call was given.
type resolveDomain struct{}

func (d resolveDomain) register(reg stepdef.Registry) {
	reg.Step(`^the operator resolves node "([^"]+)" to SUCCESS by manual completion as "([^"]+)"$`, d.resolvesByManualCompletion)
	reg.Step(`^the operator resolves node "([^"]+)" to SUCCESS by manual completion approved by (the requester|"[^"]+") as "([^"]+)"$`, d.resolvesApproved)
	reg.Step(`^the operator resolves node "([^"]+)" to SUCCESS by manual completion approved by "([^"]+)" in the background as "([^"]+)"$`, d.resolvesApprovedInTheBackground)
	reg.Step(`^exactly one ATTEMPT_RESOLUTION of node "([^"]+)" records what "([^"]+)" was given$`, d.resolutionIsAudited)
}

// resolve runs resolve-node for a fixture node of the current run: SUCCESS by manual
// completion, the scenario's operator confirming the stop, this scenario's record as the
// evidence, and approver when not empty.
func resolve(ctx context.Context, name, node, approver string) error {
	c, err := startResolve(ctx, name, node, approver)
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}

// startResolve starts that resolve-node call and does not wait for it.
func startResolve(ctx context.Context, name, node, approver string) (*kit.FlownetCall, error) {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	nd, err := fx.Node(node)
	if err != nil {
		return nil, err
	}
	id, err := kit.CurrentRunID(ctx)
	if err != nil {
		return nil, err
	}
	operator, err := fx.Principal(sc, "operator")
	if err != nil {
		return nil, err
	}
	ref := evidenceRef(sc)
	args := []string{"--run-id", id, "--node-id", nd.ID, "--to", "SUCCESS", "--manual-completion",
		"--reason-file", "@reason", "--evidence-ref", ref, "--stop-confirmed-by", operator, "--stop-evidence-ref", ref + "#stop-confirmation"}
	if approver != "" {
		args = append(args, "--approved-by", approver)
	}
	return kit.StartFlowNet(ctx, kit.FlownetSpec{Name: name, Sub: "resolve-node", Args: args,
		Files: map[string]string{"reason": fx.Scope().Reason("manual completion of " + node + " confirmed")}})
}

func (resolveDomain) resolvesByManualCompletion(ctx context.Context, node, name string) error {
	return resolve(ctx, name, node, "")
}

// resolvesApproved: "the requester" approves what they requested (the principal every
// FlowNet call of the scope runs as); a quoted name is another principal of the scope.
func (resolveDomain) resolvesApproved(ctx context.Context, node, approver, name string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	who := fx.Scope().Principal("requester")
	if approver != "the requester" {
		var err error
		if who, err = fx.Principal(sc, strings.Trim(approver, `"`)); err != nil {
			return err
		}
	}
	return resolve(ctx, name, node, who)
}

// resolvesApprovedInTheBackground: the same call as resolvesApproved for a named principal,
// left running (a barrier of its fault proxy holds it while another writer acts).
func (resolveDomain) resolvesApprovedInTheBackground(ctx context.Context, node, approver, name string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	who, err := fx.Principal(sc, approver)
	if err != nil {
		return err
	}
	_, err = startResolve(ctx, name, node, who)
	return err
}

// resolutionIsAudited compares the one ATTEMPT_RESOLUTION of the node's latest attempt with
// what the resolve-node call received.
func (resolveDomain) resolutionIsAudited(ctx context.Context, node, name string) error {
	sc := kit.SceneOf(ctx)
	c, err := kit.FinishedCall(ctx, name)
	if err != nil {
		return err
	}
	latest, err := kit.LatestAttemptOf(ctx, node)
	if err != nil {
		return err
	}
	res, err := kit.ReadExact(ctx, sc, target.RoleAudit, kit.DecodeAttemptResolution, kit.FieldIs("record_type", "ATTEMPT_RESOLUTION"), kit.FieldIs("attempt_id", latest.NodeAttemptID))
	if err != nil {
		return err
	}
	if err := sc.St.On("audit.ATTEMPT_RESOLUTION.attempt_id").Equal("ATTEMPT_RESOLUTION records of the latest attempt of "+node, 1, len(res)); err != nil {
		return err
	}
	r := res[0]
	reason, err := c.ReasonGiven()
	if err != nil {
		return err
	}
	for _, ch := range []struct{ field, want, seen string }{
		{"event_type", "ATTEMPT_RESOLVED", r.EventType},
		{"resolved_outcome", c.ArgAfter("--to"), r.ResolvedOutcome},
		{"service_principal", c.EnvValue("KSQL_FLOWNET_SERVICE_PRINCIPAL"), r.ServicePrincipal},
		{"requested_by", c.EnvValue("KSQL_FLOWNET_REQUESTED_BY"), r.RequestedBy},
		{"approved_by", kit.OrNone(c.ArgAfter("--approved-by")), kit.OrNone(r.ApprovedBy)},
		{"evidence_ref", c.ArgAfter("--evidence-ref"), r.EvidenceRef},
	} {
		if err := sc.St.On("audit.ATTEMPT_RESOLUTION."+ch.field).Equal(ch.field+" of the resolution against what "+name+" was given", ch.want, ch.seen); err != nil {
			return err
		}
	}
	// The contract writes the resolution's inputs as "RES (JSON)" without naming keys; the
	// original asserted the stop confirmation and the reason, so those must be in the record
	// under any key or column.
	for _, in := range []struct{ what, want string }{
		{"stop confirmation (--stop-confirmed-by)", c.ArgAfter("--stop-confirmed-by")},
		{"reason (--reason)", reason},
	} {
		found := in.want != "" && slices.Contains(r.Texts, in.want)
		seen := "in a field or reason key"
		if !found {
			seen = "in no field or reason key"
		}
		if err := sc.St.On("audit.ATTEMPT_RESOLUTION.reason").Assert("the "+in.what+" of "+name+" in its ATTEMPT_RESOLUTION", in.want, seen, found); err != nil {
			return err
		}
	}
	// Keys the sandbox FlowNet also writes: compared when present, noted when absent.
	for _, k := range []struct{ key, want string }{
		{"stop_evidence_ref", c.ArgAfter("--stop-evidence-ref")},
		{"run_id", c.ArgAfter("--run-id")},
		{"node_id", c.ArgAfter("--node-id")},
	} {
		seen, ok := r.Detail[k.key]
		if !ok {
			sc.St.Note("ATTEMPT_RESOLUTION reason", "no "+k.key+" key (not required by the contract)")
			continue
		}
		if err := sc.St.On("audit.ATTEMPT_RESOLUTION.reason").Equal(k.key+" of the resolution against what "+name+" was given", k.want, kit.OrNone(kit.Str(seen))); err != nil {
			return err
		}
	}
	return nil
}
