package operator

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// forceUnlockDomain: the operator's `force-unlock-network` of a stale Network lock whose
// owner was stopped: the owner copied from the network's last status reading, every
// confirmation the product requires, this scenario's record as the evidence, the
// NETWORK_LOCK_FORCE_RELEASED audit compared with what the call was given, and a trap for
// connections that would leave the machine (the Cloud Run Admin API).
type forceUnlockDomain struct{}

func (d forceUnlockDomain) register(reg stepdef.Registry) {
	reg.Step(`^the operator force-unlocks the network lock of `+kit.NetRef+`, confirming the stop by "([^"]+)", as "([^"]+)"$`, d.forceUnlocks)
	reg.Step(`^the operator force-unlocks the network lock of the run for a wrong owner as "([^"]+)"$`, d.forceUnlocksForAWrongOwner)
	reg.Step(`^the operator force-unlocks the network lock of a network that has none as "([^"]+)"$`, d.forceUnlocksAMissingLock)
	reg.Step(`^exactly one NETWORK_LOCK_FORCE_RELEASED audit of the network records what "([^"]+)" was given$`, d.forceReleaseIsAudited)
	reg.Step(`^no force-unlock-network call of this scenario connected outside the machine$`, d.noOutboundConnection)
}

// forceUnlockState keeps the outbound-connection trap of the scenario's calls.
type forceUnlockState struct {
	trap *outboundTrap
}

var forceUnlockKey = scenario.NewKey[forceUnlockState]("force-unlock")

func forceUnlocksOf(ctx context.Context) *forceUnlockState {
	return forceUnlockKey.Of(kit.SceneOf(ctx).St)
}

// forceUnlock runs force-unlock-network for n with every argument the product requires:
// the scenario's operator confirms the stop, this scenario's record is the evidence, and no
// GCP access token is configured. Its outbound connections go to the trap.
func forceUnlock(ctx context.Context, name string, n *scope.Rendered, owner, method string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	operator, err := fx.Principal(sc, "operator")
	if err != nil {
		return err
	}
	trap, err := forceUnlocksOf(ctx).outboundTrap(sc)
	if err != nil {
		return err
	}
	ref := evidenceRef(sc)
	c, err := kit.StartFlowNet(ctx, kit.FlownetSpec{Name: name, Sub: "force-unlock-network", Network: n.NetworkID,
		Args: []string{n.NetworkID, "--profile", sc.Suite.Target.Profile, "--expected-owner-invocation-id", owner,
			"--reason-file", "@reason", "--evidence-ref", ref, "--stop-confirmed-by", operator,
			"--stop-evidence-ref", ref + "#stop-confirmation", "--stop-method", method},
		Files: map[string]string{"reason": fx.Scope().Reason("force-unlock of " + n.NetworkID + " after its owner was stopped")},
		Env:   append(trap.env(sc), "KSQL_FLOWNET_GCP_ACCESS_TOKEN="),
	})
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}

func (forceUnlockDomain) forceUnlocks(ctx context.Context, ref, method, name string) error {
	n, err := kit.FixturesOf(ctx).NetworkOf(ref)
	if err != nil {
		return err
	}
	owner, err := statusesOf(ctx).expectedOwner(n)
	if err != nil {
		return err
	}
	return forceUnlock(ctx, name, n, owner, method)
}

// forceUnlocksAMissingLock: force-unlock-network of <scope>_missing, a network of this scope
// that never ran, so it holds no lock (m7-03's third phase: expected LOCK_NOT_FOUND).
func (forceUnlockDomain) forceUnlocksAMissingLock(ctx context.Context, name string) error {
	fx := kit.FixturesOf(ctx)
	n := &scope.Rendered{NetworkID: fx.Scope().NetworkID("missing"), FixtureNetworkID: "missing"}
	return forceUnlock(ctx, name, n, "no_owner", "local_pid")
}

func (forceUnlockDomain) forceUnlocksForAWrongOwner(ctx context.Context, name string) error {
	n, err := kit.FixturesOf(ctx).Rendered()
	if err != nil {
		return err
	}
	owner, err := statusesOf(ctx).expectedOwner(n)
	if err != nil {
		return err
	}
	return forceUnlock(ctx, name, n, owner+"_wrong", "local_pid")
}

// forceReleaseIsAudited compares the one NETWORK_LOCK_FORCE_RELEASED audit of the call's
// network with what the call received (argv, environment, reason file) and the lock record
// it released, and the RELEASED: line with both.
func (forceUnlockDomain) forceReleaseIsAudited(ctx context.Context, name string) error {
	c, err := kit.FinishedCall(ctx, name)
	if err != nil {
		return err
	}
	a, err := theForceReleaseAudit(ctx, c.SubArg(0))
	if err != nil {
		return err
	}
	lockKey, err := auditHoldsWhatWasGiven(kit.SceneOf(ctx), c, name, a)
	if err != nil {
		return err
	}
	return releasedLockMatchesAudit(ctx, c, name, a, lockKey)
}

// theForceReleaseAudit is the one NETWORK_LOCK_FORCE_RELEASED audit naming network.
func theForceReleaseAudit(ctx context.Context, network string) (kit.OperationAudit, error) {
	sc := kit.SceneOf(ctx)
	audits, err := kit.ReadExact(ctx, sc, target.RoleAudit, kit.DecodeOperationAudit, kit.FieldIs("record_type", "OPERATION_AUDIT"), kit.FieldIs("result_code", "NETWORK_LOCK_FORCE_RELEASED"))
	if err != nil {
		return kit.OperationAudit{}, err
	}
	var mine []kit.OperationAudit
	for _, a := range audits {
		if a.Event["network_id"] == network {
			mine = append(mine, a)
		}
	}
	if err := sc.St.On("audit.OPERATION_AUDIT.result_code", "audit.NETWORK_LOCK_FORCE_RELEASED.network_id").Equal("NETWORK_LOCK_FORCE_RELEASED audits naming network "+network, 1, len(mine)); err != nil {
		return kit.OperationAudit{}, err
	}
	return mine[0], nil
}

// auditHoldsWhatWasGiven compares audit a field by field with what call c (named name) was
// given: arguments, environment, reason; it returns the network's lock key.
func auditHoldsWhatWasGiven(sc *kit.Scene, c *kit.FlownetCall, name string, a kit.OperationAudit) (string, error) {
	network := c.SubArg(0)
	reason, err := c.ReasonGiven()
	if err != nil {
		return "", err
	}
	profile := c.ArgAfter("--profile")
	lockKey, err := kit.CanonicalKey("N1", profile, network)
	if err != nil {
		return "", err
	}
	want := []struct{ field, value string }{
		{"event_type", "NETWORK_LOCK_FORCE_RELEASED"},
		{"network_id", network},
		{"profile", profile},
		{"lock_key", lockKey},
		{"previous_owner_invocation_id", c.ArgAfter("--expected-owner-invocation-id")},
		{"service_principal", c.EnvValue("KSQL_FLOWNET_SERVICE_PRINCIPAL")},
		{"requested_by", c.EnvValue("KSQL_FLOWNET_REQUESTED_BY")},
		{"stop_confirmed_by", c.ArgAfter("--stop-confirmed-by")},
		{"stop_method", c.ArgAfter("--stop-method")},
		{"stop_evidence_ref", c.ArgAfter("--stop-evidence-ref")},
		{"evidence_ref", c.ArgAfter("--evidence-ref")},
		{"reason", reason},
	}
	for _, w := range want {
		if err := sc.St.On("audit.NETWORK_LOCK_FORCE_RELEASED."+w.field).Equal(w.field+" of the force-release audit against what "+name+" was given", w.value, kit.OrNone(kit.Str(a.Event[w.field]))); err != nil {
			return "", err
		}
	}
	return lockKey, nil
}

// releasedLockMatchesAudit checks the lock record audit a names (its record_id): left
// CANCELLED under the audit's post_release_revision, its lease and heartbeat as the audit
// says, and the RELEASED: line call c printed.
func releasedLockMatchesAudit(ctx context.Context, c *kit.FlownetCall, name string, a kit.OperationAudit, lockKey string) error {
	sc := kit.SceneOf(ctx)
	post, isNumber := a.Event["post_release_revision"].(float64)
	if err := sc.St.On("audit.NETWORK_LOCK_FORCE_RELEASED.post_release_revision").Assert("post_release_revision of the force-release audit", "an integer", fmt.Sprint(a.Event["post_release_revision"]),
		isNumber && post == math.Trunc(post)); err != nil {
		return err
	}
	recordID := kit.Str(a.Event["record_id"])
	locks, err := kit.ReadExact(ctx, sc, target.RoleState, kit.DecodeNetworkLock, kit.FieldIs("$id", recordID))
	if err != nil {
		return err
	}
	if err := sc.St.On("audit.NETWORK_LOCK_FORCE_RELEASED.record_id").Equal("lock records with the audit's record_id "+kit.OrNone(recordID), 1, len(locks)); err != nil {
		return err
	}
	tomb := locks[0]
	for _, ch := range []struct{ subject, what, want, seen string }{
		{"audit.NETWORK_LOCK_FORCE_RELEASED.post_release_revision", "post_release_revision of the force-release audit against the released lock's $revision", tomb.Revision, fmt.Sprint(int64(post))},
		{"state.NETWORK_LOCK.status", "status of the released lock record", "CANCELLED", tomb.Status},
		{"state.NETWORK_LOCK.status_reason", "status_reason of the released lock record", "NETWORK_LOCK_FORCE_RELEASED", tomb.StatusReason},
		{"state.NETWORK_LOCK.lock_key", "lock_key of the released lock record", "(none)", kit.OrNone(tomb.LockKey)},
		{"audit.NETWORK_LOCK_FORCE_RELEASED.previous_heartbeat_at", "previous_heartbeat_at of the force-release audit against the released lock's heartbeat_at (minute)", MinuteOf(tomb.HeartbeatAt), MinuteOf(kit.Str(a.Event["previous_heartbeat_at"]))},
		{"audit.NETWORK_LOCK_FORCE_RELEASED.previous_lease_expires_at", "previous_lease_expires_at of the force-release audit against the released lock's lease_expires_at (minute)", MinuteOf(tomb.LeaseExpiresAt), MinuteOf(kit.Str(a.Event["previous_lease_expires_at"]))},
		{"audit.NETWORK_LOCK_FORCE_RELEASED.previous_lease_token", "previous_lease_token of the force-release audit", "present", kit.Presence(kit.Str(a.Event["previous_lease_token"]) != "")},
		{"audit.NETWORK_LOCK_FORCE_RELEASED.released_at", "released_at of the force-release audit", "present", kit.Presence(kit.Str(a.Event["released_at"]) != "")},
		{`text.force-unlock-network:"RELEASED: "`, "RELEASED: line of " + name, fmt.Sprintf("RELEASED: %s (previous owner %s, post revision %s).", lockKey, c.ArgAfter("--expected-owner-invocation-id"), tomb.Revision),
			kit.FirstLineOrNone(c.Stdout)},
	} {
		if err := sc.St.On(ch.subject).Equal(ch.what, ch.want, ch.seen); err != nil {
			return err
		}
	}
	return nil
}

func (forceUnlockDomain) noOutboundConnection(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	t := forceUnlocksOf(ctx).trap
	if t == nil {
		return fmt.Errorf("no force-unlock-network call was made in this scenario")
	}
	n, seen := t.count()
	if n > 0 {
		sc.St.Note("connections trapped", strings.Join(seen, "; "))
	}
	return sc.St.On("traffic.force-unlock-network.hosts").Equal("connections of force-unlock-network calls to hosts other than kintone (trapped by their proxy)", 0, n)
}

// outboundTrap is a local proxy that answers nothing: force-unlock-network calls get it as
// HTTPS_PROXY/HTTP_PROXY (NO_PROXY: kintone's host and loopback), so a connection to anywhere
// else — the Cloud Run Admin API — lands here and is counted instead of leaving the machine.
// Go and Node (NODE_USE_ENV_PROXY) clients honour these variables.
type outboundTrap struct {
	ln    net.Listener
	mu    sync.Mutex
	lines []string // each connection's first line (CONNECT host:port …)
}

func (s *forceUnlockState) outboundTrap(sc *kit.Scene) (*outboundTrap, error) {
	if s.trap != nil {
		return s.trap, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("outbound-connection trap: %w", err)
	}
	t := &outboundTrap{ln: ln}
	go t.serve()
	sc.St.Defer("close the outbound-connection trap", func(context.Context) error { return ln.Close() })
	s.trap = t
	return t, nil
}

func (t *outboundTrap) serve() {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			t.mu.Lock()
			t.lines = append(t.lines, strings.TrimSpace(line))
			t.mu.Unlock()
			_, _ = c.Write([]byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
		}()
	}
}

func (t *outboundTrap) count() (int, []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.lines), append([]string(nil), t.lines...)
}

func (t *outboundTrap) env(sc *kit.Scene) []string {
	proxy := "http://" + t.ln.Addr().String()
	noProxy := "localhost,127.0.0.1,::1"
	if u, err := url.Parse(sc.Suite.Target.BaseURL); err == nil && u.Hostname() != "" {
		noProxy += "," + u.Hostname()
	}
	return []string{"HTTPS_PROXY=" + proxy, "https_proxy=" + proxy, "HTTP_PROXY=" + proxy, "http_proxy=" + proxy,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy, "NODE_USE_ENV_PROXY=1"}
}
