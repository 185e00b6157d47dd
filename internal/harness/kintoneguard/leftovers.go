package kintoneguard

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// A scope's head, KSQL_FLOW_TEST_<yyMMddHHmmss UTC>_<4 hex>, is unique per scope and names
// when it was made (internal/harness/scope). It is a prefix of every run's business key and network
// id the scope makes, so a sweep can group what crashed runs left by it even where the label
// cannot be told apart from a fixture id.
var (
	scopeHeadRE    = regexp.MustCompile(`^KSQL_FLOW_TEST_([0-9]{12})_[0-9a-f]{4}`)
	requestScopeRE = regexp.MustCompile(`^(KSQL_FLOW_TEST_[0-9]{12}_[0-9a-f]{4}(?:_[A-Za-z0-9_]*)?):`)
)

// ScopeHead returns the head of a flowtest identifier and when its scope was made; ok is
// false for anything else.
func ScopeHead(id string) (head string, made time.Time, ok bool) {
	m := scopeHeadRE.FindStringSubmatch(id)
	if m == nil {
		return "", time.Time{}, false
	}
	t, err := time.ParseInLocation("060102150405", m[1], time.UTC)
	if err != nil {
		return "", time.Time{}, false
	}
	return m[0], t, true
}

// RunScopeHeads reads every NETWORK_RUN of the state app and returns the scope heads their
// business keys and network ids carry (records of other writers are not flowtest's and are
// skipped).
func RunScopeHeads(ctx context.Context, api *kintoneapi.Client, stateApp string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if stateApp == "" {
		return out, nil
	}
	runs, err := api.GetAll(ctx, stateApp, `record_type in ("NETWORK_RUN")`, []string{"network_id", "business_key"})
	if err != nil {
		return nil, fmt.Errorf("list NETWORK_RUN records: %w", err)
	}
	for _, r := range runs {
		for _, v := range []string{r.Str("business_key"), r.Str("network_id")} {
			if h, made, ok := ScopeHead(v); ok {
				out[h] = made
				break
			}
		}
	}
	return out, nil
}

// RequestScopes reads the request app and counts, per scope, the records whose reason
// starts with "<scope>:" — the per-scenario cleanup's rule (SweepRequests), and the only way
// a request record is tied to a scope.
func RequestScopes(ctx context.Context, api *kintoneapi.Client, requestApp string) (map[string]int, error) {
	out := map[string]int{}
	if requestApp == "" {
		return out, nil
	}
	// The app is read whole: kintone's like on MULTI_LINE_TEXT is a word search, which could
	// miss a reason; the E2E request app holds only test requests.
	recs, err := api.GetAll(ctx, requestApp, "", []string{FieldReason})
	if err != nil {
		return nil, fmt.Errorf("list request records: %w", err)
	}
	for _, r := range recs {
		if m := requestScopeRE.FindStringSubmatch(r.Str(FieldReason)); m != nil {
			out[m[1]]++
		}
	}
	return out, nil
}

// HeldLock is a NETWORK_LOCK record a scope still holds.
type HeldLock struct {
	ID           string
	LeaseExpires time.Time // zero when it does not parse (then it counts as live: fail closed)
}

// LeaseAllowance is the contract's allowance over lease_expires_at (DATETIME keeps whole
// minutes): a lock is live until lease_expires_at + 60 s.
const LeaseAllowance = 60 * time.Second

// HeldLocks picks the held locks out of a scope's state records (ScopeRecords): status
// RUNNING with a lock_key (a released lock is a tombstone with lock_key cleared).
func HeldLocks(state []kintoneapi.Record) []HeldLock {
	var out []HeldLock
	for _, r := range state {
		if r.Str("record_type") != "NETWORK_LOCK" || r.Str("status") != "RUNNING" || r.Str("lock_key") == "" {
			continue
		}
		l := HeldLock{ID: r.ID()}
		if t, err := time.Parse(time.RFC3339, r.Str("lease_expires_at")); err == nil {
			l.LeaseExpires = t
		}
		out = append(out, l)
	}
	return out
}

// Live reports whether the lock's lease (plus the allowance) has not run out at now.
func (l HeldLock) Live(now time.Time) bool {
	return l.LeaseExpires.IsZero() || !now.After(l.LeaseExpires.Add(LeaseAllowance))
}
