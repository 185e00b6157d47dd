package flownet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// force-unlock-network (§1.5): release a stale Network lock after the operator confirmed
// that its owner has stopped. Every check comes before the one write, so every refusal
// writes nothing: owner → lease (with the 60 s DATETIME allowance) → stop confirmation by
// method → re-read fence → tombstone PUT with the read $revision → OPERATION_AUDIT.

var forceUnlockSpec = optionSpec{command: "force-unlock-network",
	values: []string{"--profile", "--expected-owner-invocation-id", "--reason-file", "--evidence-ref",
		"--stop-confirmed-by", "--stop-evidence-ref", "--stop-method"},
	positional: 1, positionalName: "<network_id>"}

func init() {
	forceUnlockSpec.required = forceUnlockSpec.values
}

// Stop confirmation methods.
const (
	stopManual   = "manual"
	stopLocalPID = "local_pid"
	stopCloudRun = "cloud_run_job_execution"
)

const codeStopNotConfirmed = "STOP_NOT_CONFIRMED"

// unlockRequest is one force-unlock-network call, arguments and environment resolved.
type unlockRequest struct {
	networkID, profile, expectedOwner      string
	reason, evidenceRef                    string
	stopConfirmedBy, stopEvidence, method  string
	servicePrincipal, requestedBy, gcpAuth string
}

// forceUnlockNetwork is `force-unlock-network <network_id> --profile … --stop-method …`.
func (c *cli) forceUnlockNetwork(args []string) int {
	o, problems := parseOptions(forceUnlockSpec, args)
	if len(problems) > 0 {
		return c.argumentError("force-unlock-network", problems)
	}
	reason, err := readReasonFile(o.get("--reason-file"))
	if err != nil {
		return c.fail(coded("INVALID_ARGUMENT", "%v", err), "")
	}
	env, err := c.requireEnv("KSQL_FLOWNET_SERVICE_PRINCIPAL", "KSQL_FLOWNET_REQUESTED_BY")
	if err != nil {
		return c.fail(err, "FORCE_UNLOCK_NETWORK_FAILED")
	}
	r := unlockRequest{networkID: o.positional[0], profile: o.get("--profile"),
		expectedOwner: o.get("--expected-owner-invocation-id"), reason: reason, evidenceRef: o.get("--evidence-ref"),
		stopConfirmedBy: o.get("--stop-confirmed-by"), stopEvidence: o.get("--stop-evidence-ref"), method: o.get("--stop-method"),
		servicePrincipal: env["KSQL_FLOWNET_SERVICE_PRINCIPAL"], requestedBy: env["KSQL_FLOWNET_REQUESTED_BY"],
		gcpAuth: strings.TrimSpace(c.getenv("KSQL_FLOWNET_GCP_ACCESS_TOKEN"))}
	for name, v := range map[string]string{"reason": r.reason, "--evidence-ref": r.evidenceRef, "--expected-owner-invocation-id": r.expectedOwner,
		"--stop-confirmed-by": r.stopConfirmedBy, "--stop-evidence-ref": r.stopEvidence} {
		if strings.TrimSpace(v) == "" {
			return c.fail(coded("INVALID_ARGUMENT", "%s is empty", name), "")
		}
	}
	st, err := c.newStore(false, 0)
	if err != nil {
		return c.fail(err, "FORCE_UNLOCK_NETWORK_FAILED")
	}
	res, err := c.unlock(context.Background(), st, r)
	if err != nil {
		return c.fail(err, "FORCE_UNLOCK_NETWORK_FAILED")
	}
	fmt.Fprintf(c.stdout, "RELEASED: %s (previous owner %s, post revision %s).\n", res.lockKey, r.expectedOwner, res.postRevision)
	// The product's hint line, word for word (it names resolve-node, although a resume is what
	// adjudicates an attempt the previous owner left RUNNING: resolve-node takes only UNKNOWN or
	// non-idempotent FAILED nodes).
	fmt.Fprintln(c.stdout, "If a Node was running, use resolve-node to resolve it as UNKNOWN before resume.")
	return 0
}

type unlockResult struct{ lockKey, postRevision string }

func (c *cli) unlock(ctx context.Context, st *store, r unlockRequest) (unlockResult, error) {
	n1, err := N1Key(r.profile, r.networkID)
	if err != nil {
		return unlockResult{}, &codedError{Code: "INVALID_ARGUMENT", Msg: err.Error(), Err: err}
	}
	lock, err := st.byKey(ctx, st.stateApp, "LOCK:"+n1)
	if err != nil {
		return unlockResult{}, &codedError{Code: "LOCK_READ_FAILED", Msg: "read the network lock: " + err.Error(), Err: err}
	}
	if lock == nil {
		return unlockResult{}, coded("LOCK_NOT_FOUND", "network %s (profile %s) holds no lock", r.networkID, r.profile)
	}
	if owner := lock.Str("owner_invocation_id"); owner != r.expectedOwner {
		refusal := coded("OWNER_MISMATCH", "the lock of network %s is owned by invocation %s, not the expected %s", r.networkID, owner, r.expectedOwner)
		if defect.ForceUnlockRefusalAudited { // planted defect: the refusal is audited, a write a refusal must not make
			b, _ := json.Marshal(map[string]any{"event_type": "NETWORK_LOCK_FORCE_RELEASE_REFUSED", "network_id": r.networkID, "code": refusal.Code, "requested_by": r.requestedBy})
			_, _, _ = st.insert(ctx, st.auditApp, "OP:net_unlock_refused_"+uuid.NewString(), vals(map[string]any{"record_type": "OPERATION_AUDIT", "result_code": refusal.Code, "reason": string(b)}))
		}
		return unlockResult{}, refusal
	}
	now := c.now()
	exp, ok := parseTime(lock.Str("lease_expires_at"))
	if !defect.ForceUnlockAcceptsLiveLease && (!ok || !now.After(exp.Add(kintoneDatetimeAllowance*time.Second))) { // the planted defect skips the lease check
		return unlockResult{}, coded("LEASE_STILL_ACTIVE", "the lease of network %s expires at %s; with the %d s DATETIME allowance it is live until %s",
			r.networkID, orWord(lock.Str("lease_expires_at"), "(unreadable)"), kintoneDatetimeAllowance, isoMillis(exp.Add(kintoneDatetimeAllowance*time.Second)))
	}
	instance, _ := strings.CutPrefix(lock.Str("status_reason"), "owner_instance_id=")
	if err := c.confirmStopped(r, instance); err != nil {
		return unlockResult{}, err
	}
	// The fence: nothing may have moved since the checks above.
	again, err := st.byKey(ctx, st.stateApp, "LOCK:"+n1)
	if err != nil {
		return unlockResult{}, &codedError{Code: "LOCK_READ_FAILED", Msg: "re-read the network lock: " + err.Error(), Err: err}
	}
	if again == nil || again.Revision() != lock.Revision() || again.Str("heartbeat_at") != lock.Str("heartbeat_at") ||
		again.Str("owner_invocation_id") != lock.Str("owner_invocation_id") || again.Str("lease_token") != lock.Str("lease_token") {
		return unlockResult{}, coded("HEARTBEAT_ADVANCED", "the lock of network %s changed while it was checked; check again", r.networkID)
	}
	releasedAt := isoMillis(c.now())
	post, err := st.updateByID(ctx, st.stateApp, lock.ID(), vals(map[string]any{
		"record_key": lockDoneKey(n1, lock.Str("lease_token")), "lock_key": "", "owner_invocation_id": "", "lease_token": "",
		"status": StatusCancelled, "status_reason": "NETWORK_LOCK_FORCE_RELEASED", "finished_at": releasedAt,
		"revision": atoi(lock.Str("revision")) + 1,
	}), lock.Revision())
	if err != nil {
		if errCode(err, "") == codeRevisionConflict {
			return unlockResult{}, err
		}
		return unlockResult{}, &codedError{Code: "RELEASE_UNCONFIRMED", Msg: "the tombstone write could not be confirmed: " + err.Error(), Err: err}
	}
	eventID := "net_unlock_" + uuid.NewString()
	audit := map[string]any{
		"event_id": eventID, "event_type": "NETWORK_LOCK_FORCE_RELEASED",
		"network_id": r.networkID, "profile": r.profile, "lock_key": n1, "record_id": lock.ID(),
		"previous_owner_invocation_id": lock.Str("owner_invocation_id"), "previous_lease_token": lock.Str("lease_token"),
		"previous_heartbeat_at": lock.Str("heartbeat_at"), "previous_lease_expires_at": lock.Str("lease_expires_at"),
		"service_principal": r.servicePrincipal, "requested_by": r.requestedBy,
		"stop_confirmed_by": r.stopConfirmedBy, "stop_method": r.method, "stop_evidence_ref": r.stopEvidence,
		"reason": r.reason, "evidence_ref": r.evidenceRef, "released_at": releasedAt, "post_release_revision": atoi(post),
	}
	b, _ := json.Marshal(audit)
	if _, _, err := st.insert(ctx, st.auditApp, "OP:"+eventID, vals(map[string]any{
		"record_type": "OPERATION_AUDIT", "result_code": "NETWORK_LOCK_FORCE_RELEASED", "reason": string(b), "resolved_at": releasedAt,
	})); err != nil {
		return unlockResult{}, &codedError{Code: "AUDIT_FAILED", Msg: fmt.Sprintf("the lock was released (post revision %s) but its audit %s could not be written: %v", post, eventID, err), Err: err}
	}
	return unlockResult{lockKey: n1, postRevision: post}, nil
}

// cloudRunExecution is the only owner instance form a Cloud Run confirmation accepts.
var cloudRunExecution = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/jobs/[^/]+/executions/[^/]+$`)

// confirmStopped applies the stop confirmation method. It fails closed: anything it cannot
// prove stopped is STOP_NOT_CONFIRMED.
func (c *cli) confirmStopped(r unlockRequest, instance string) error {
	switch r.method {
	case stopManual:
		return nil // confirmer and stop evidence are required arguments
	case stopLocalPID:
		rest, ok := strings.CutPrefix(instance, "local-pid://")
		host, pidText, ok2 := strings.Cut(rest, "/")
		pid, err := strconv.Atoi(pidText)
		if !ok || !ok2 || err != nil || pid <= 0 {
			return coded(codeStopNotConfirmed, "owner instance %q is not a local-pid://<host>/<pid> owner; local_pid cannot confirm its stop", instance)
		}
		if host != c.host() {
			return coded(codeStopNotConfirmed, "owner instance %q runs on host %s, not on this host %s; local_pid can only check this host", instance, host, c.host())
		}
		if !pidGone(pid) {
			return coded(codeStopNotConfirmed, "process %d on %s still exists (only ESRCH counts as stopped)", pid, host)
		}
		return nil
	case stopCloudRun:
		if defect.CloudRunProbeWithoutToken { // planted defect: asks the Cloud Run API before any check
			if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("https://run.googleapis.com/v2/" + instance); err == nil {
				resp.Body.Close()
			}
		}
		if !cloudRunExecution.MatchString(instance) && !defect.CloudRunOwnerUnchecked { // the planted defect skips the owner form
			return coded(codeStopNotConfirmed, "owner instance %q is not a valid Cloud Run job execution name (projects/…/locations/…/jobs/…/executions/…)", instance)
		}
		if r.gcpAuth == "" {
			return coded(codeStopNotConfirmed, "KSQL_FLOWNET_GCP_ACCESS_TOKEN is not configured; the state of Cloud Run execution %s cannot be read", instance)
		}
		// The sandbox never calls Google: with a token it still cannot read the execution's
		// state, so it fails closed as the product does when the state is unknown.
		return coded(codeStopNotConfirmed, "the sandbox FlowNet does not query the Cloud Run Admin API; the stop of %s is unconfirmed (use --stop-method manual)", instance)
	}
	return coded(codeStopNotConfirmed, "unknown stop confirmation method %q (%s, %s or %s)", r.method, stopManual, stopLocalPID, stopCloudRun)
}
