package steps

import (
	"context"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
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
	return c.finish(ctx)
}

// startResolve starts that resolve-node call and does not wait for it.
func startResolve(ctx context.Context, name, node, approver string) (*flownetCall, error) {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	nd, err := fx.node(node)
	if err != nil {
		return nil, err
	}
	id, err := currentRunID(ctx)
	if err != nil {
		return nil, err
	}
	operator, err := fx.principal(sc, "operator")
	if err != nil {
		return nil, err
	}
	ref := evidenceRef(sc)
	args := []string{"--run-id", id, "--node-id", nd.ID, "--to", "SUCCESS", "--manual-completion",
		"--reason-file", "@reason", "--evidence-ref", ref, "--stop-confirmed-by", operator, "--stop-evidence-ref", ref + "#stop-confirmation"}
	if approver != "" {
		args = append(args, "--approved-by", approver)
	}
	return startFlowNet(ctx, flownetSpec{Name: name, Sub: "resolve-node", Args: args,
		Files: map[string]string{"reason": fx.scope().Reason("manual completion of " + node + " confirmed")}})
}

func (resolveDomain) resolvesByManualCompletion(ctx context.Context, node, name string) error {
	return resolve(ctx, name, node, "")
}

// resolvesApproved: "the requester" approves what they requested (the principal every
// FlowNet call of the scope runs as); a quoted name is another principal of the scope.
func (resolveDomain) resolvesApproved(ctx context.Context, node, approver, name string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	who := fx.scope().Principal("requester")
	if approver != "the requester" {
		var err error
		if who, err = fx.principal(sc, strings.Trim(approver, `"`)); err != nil {
			return err
		}
	}
	return resolve(ctx, name, node, who)
}

// resolvesApprovedInTheBackground: the same call as resolvesApproved for a named principal,
// left running (a barrier of its fault proxy holds it while another writer acts).
func (resolveDomain) resolvesApprovedInTheBackground(ctx context.Context, node, approver, name string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	who, err := fx.principal(sc, approver)
	if err != nil {
		return err
	}
	_, err = startResolve(ctx, name, node, who)
	return err
}

// resolutionIsAudited compares the one ATTEMPT_RESOLUTION of the node's latest attempt with
// what the resolve-node call received.
func (resolveDomain) resolutionIsAudited(ctx context.Context, node, name string) error {
	sc := sceneOf(ctx)
	c, err := finishedCall(ctx, name)
	if err != nil {
		return err
	}
	latest, err := latestAttemptOf(ctx, node)
	if err != nil {
		return err
	}
	res, err := readExact(ctx, sc, target.RoleAudit, decodeAttemptResolution, match{"record_type", "ATTEMPT_RESOLUTION"}, match{"attempt_id", latest.NodeAttemptID})
	if err != nil {
		return err
	}
	if err := sc.st.Equal("ATTEMPT_RESOLUTION records of the latest attempt of "+node, 1, len(res)); err != nil {
		return err
	}
	r := res[0]
	reason, err := c.reasonGiven()
	if err != nil {
		return err
	}
	for _, ch := range []struct{ field, want, seen string }{
		{"event_type", "ATTEMPT_RESOLVED", r.EventType},
		{"resolved_outcome", c.argAfter("--to"), r.ResolvedOutcome},
		{"service_principal", c.envValue("KSQL_FLOWNET_SERVICE_PRINCIPAL"), r.ServicePrincipal},
		{"requested_by", c.envValue("KSQL_FLOWNET_REQUESTED_BY"), r.RequestedBy},
		{"approved_by", orNone(c.argAfter("--approved-by")), orNone(r.ApprovedBy)},
		{"evidence_ref", c.argAfter("--evidence-ref"), r.EvidenceRef},
	} {
		if err := sc.st.Equal(ch.field+" of the resolution against what "+name+" was given", ch.want, ch.seen); err != nil {
			return err
		}
	}
	// The contract writes the resolution's inputs as "RES (JSON)" without naming keys; the
	// original asserted the stop confirmation and the reason, so those must be in the record
	// under any key or column.
	for _, in := range []struct{ what, want string }{
		{"stop confirmation (--stop-confirmed-by)", c.argAfter("--stop-confirmed-by")},
		{"reason (--reason)", reason},
	} {
		found := in.want != "" && slices.Contains(r.Texts, in.want)
		seen := "in a field or reason key"
		if !found {
			seen = "in no field or reason key"
		}
		if err := sc.st.Assert("the "+in.what+" of "+name+" in its ATTEMPT_RESOLUTION", in.want, seen, found); err != nil {
			return err
		}
	}
	// Keys the sandbox FlowNet also writes: compared when present, noted when absent.
	for _, k := range []struct{ key, want string }{
		{"stop_evidence_ref", c.argAfter("--stop-evidence-ref")},
		{"run_id", c.argAfter("--run-id")},
		{"node_id", c.argAfter("--node-id")},
	} {
		seen, ok := r.Detail[k.key]
		if !ok {
			sc.st.Note("ATTEMPT_RESOLUTION reason", "no "+k.key+" key (not required by the contract)")
			continue
		}
		if err := sc.st.Equal(k.key+" of the resolution against what "+name+" was given", k.want, orNone(str(seen))); err != nil {
			return err
		}
	}
	return nil
}
