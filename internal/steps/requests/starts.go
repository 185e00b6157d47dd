package requests

import (
	"context"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/ksqlprofile"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
)

// startDomain: what a scheduled START (and the cron path) must produce beyond a Run — the
// Run's as_of, the attempts and JOB log rows it drove, and the business result its node
// ASSERTs: the expectations of the scheduled aggregate are computed here, independently, by
// reading 案件管理 itself (GET only, with the token kSQL-Flow's own config names, on the
// config's origin, which must be the E2E tenant's).
type startDomain struct{}

func (d startDomain) register(reg stepdef.Registry) {
	reg.Step(`^the deal count and 売上 sum of 案件管理 for 受注予定日 in (\d{4})-(\d{2}) are read from 案件管理 itself$`, d.readDealExpectations)
	reg.Step(`^the working copy of the SQL of node "([^"]+)" gets those expectations$`, d.fillExpectations)
	reg.Step(`^the run's as_of is "([^"]+)"$`, d.runAsOf)
	reg.Step(`^every attempt of the run is "([^"]+)" with a read count of at least 0 and a written count of 0$`, d.attemptsReadOnly)
	reg.Step(`^the JOB log row of every attempt of the run has as_of "([^"]+)"$`, d.jobLogAsOf)
}

// startState is the expectations read from 案件管理.
type startState struct {
	month      string // yyyy-MM
	count      int
	sum        string // exact decimal
	haveValues bool
}

var startKey = scenario.NewKey[startState]("starts")

// dealsReader is a GET-only client for 案件管理 as kSQL-Flow reads it: the origin and the app
// id of its logical app 案件管理 from describe-profile (product-contract §7) — the origin must
// be the target's, so the expectation is read from the tenant the job reads — and the token
// that the config's `env:NAME` reference names (describe-profile never shows a token source;
// the original read the reference from the config too), resolved from kSQL-Flow's environment.
func dealsReader(ctx context.Context, sc *kit.Scene) (*kintoneapi.Client, string, error) {
	t := sc.Suite.Target
	d, err := proxy.DescribeProfile(ctx, sc, t.KsqlFlowConfig)
	if err != nil {
		return nil, "", err
	}
	cu, err1 := url.Parse(d.BaseURL)
	tu, err2 := url.Parse(t.BaseURL)
	if err1 != nil || err2 != nil || cu.Scheme != tu.Scheme || cu.Host != tu.Host {
		return nil, "", fmt.Errorf("kSQL-Flow profile %s reads %s, not the E2E tenant %s: the expectation would come from another origin", t.Profile, d.BaseURL, t.BaseURL)
	}
	id := d.Apps[target.LogicalDeals]
	if id == "" {
		return nil, "", fmt.Errorf("describe-profile of %s reports no app %s", t.Profile, target.LogicalDeals)
	}
	names, err := ksqlprofile.TokenRefs(t.KsqlFlowConfig, t.Profile, target.LogicalDeals)
	if err != nil {
		return nil, "", err
	}
	var toks []string
	for _, name := range names {
		tok := ""
		for _, kv := range t.KsqlFlowEnv() {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				tok = v
			}
		}
		if tok == "" {
			return nil, "", fmt.Errorf("the environment kSQL-Flow gets has no %s (a token of %s)", name, target.LogicalDeals)
		}
		toks = append(toks, tok)
	}
	token := strings.Join(toks, ",") // as kSQL-Flow sends an app's tokens
	hc, err := kintoneapi.HTTPClientWithCA(t.CAFile)
	if err != nil {
		return nil, "", err
	}
	return kintoneapi.New(t.BaseURL, hc, map[string]string{id: token}), id, nil
}

// readDealExpectations counts the deals with 受注予定日 in the month and sums their 売上,
// filtering the dates exactly here (the query only narrows the read).
func (startDomain) readDealExpectations(ctx context.Context, year, month string) error {
	sc := kit.SceneOf(ctx)
	from, err := time.Parse("2006-01", year+"-"+month)
	if err != nil {
		return err
	}
	to := from.AddDate(0, 1, 0)
	lo, hi := from.Format("2006-01-02"), to.Format("2006-01-02")
	c, app, err := dealsReader(ctx, sc)
	if err != nil {
		return err
	}
	recs, err := kintoneguard.Counted(c, sc.St.API).GetAll(ctx, app, fmt.Sprintf(`受注予定日 >= "%s" and 受注予定日 < "%s"`, lo, hi), []string{"受注予定日", "売上"})
	if err != nil {
		return fmt.Errorf("read 案件管理: %w", err)
	}
	n := 0
	sum := new(big.Rat)
	for _, r := range recs {
		d := kit.DecodeDealRow(r)
		if d.ExpectedDate >= lo && d.ExpectedDate < hi {
			n++
			v, ok := new(big.Rat).SetString(strings.TrimSpace(d.Sales))
			if !ok {
				return fmt.Errorf("売上 of 案件管理 record %s is not a number", d.RecordID)
			}
			sum.Add(sum, v)
		}
	}
	total := sum.RatString() // an integer prints without a denominator
	if !sum.IsInt() {
		total = strings.TrimRight(strings.TrimRight(sum.FloatString(10), "0"), ".")
	}
	ss := startKey.Of(sc.St)
	*ss = startState{month: year + "-" + month, count: n, sum: total, haveValues: true}
	sc.St.Note("案件管理 expectations for "+ss.month, fmt.Sprintf("count %d, 売上 sum %s (from %d records read)", n, ss.sum, len(recs)))
	return sc.St.On("harness.fixture").Assert("deals of 案件管理 with 受注予定日 in "+ss.month, "> 0 (an empty month would prove nothing)", n, n > 0)
}

// Placeholders of p211-scheduled-aggregate.sql: numbers no count or sum of sales can be, so
// the fixture parses as it is and an unfilled copy fails its ASSERTs.
const (
	expectedCountPlaceholder = "-2110001"
	expectedSumPlaceholder   = "-2110002"
)

// fillExpectations writes the expectations into the rendered SQL's placeholders, through the
// fixture domain's checked working-copy edit.
func (startDomain) fillExpectations(ctx context.Context, node string) error {
	ss := startKey.Of(kit.SceneOf(ctx).St)
	if !ss.haveValues {
		return fmt.Errorf("no expectations were read (missing: the deal count and 売上 sum of 案件管理 … are read)")
	}
	if err := (kit.FixtureDomain{}).EditTheWorkingCopy(ctx, node, expectedCountPlaceholder, strconv.Itoa(ss.count)); err != nil {
		return err
	}
	return kit.FixtureDomain{}.EditTheWorkingCopy(ctx, node, expectedSumPlaceholder, ss.sum)
}

// sameInstant compares two kintone/ISO date-times as instants.
func sameInstant(a, b string) bool {
	ta, err1 := time.Parse(time.RFC3339Nano, a)
	tb, err2 := time.Parse(time.RFC3339Nano, b)
	return err1 == nil && err2 == nil && ta.Equal(tb)
}

func (startDomain) runAsOf(ctx context.Context, want string) error {
	r, err := kit.TheRun(ctx)
	if err != nil {
		return err
	}
	return kit.SceneOf(ctx).St.On("state.NETWORK_RUN.as_of").Assert("as_of of run "+r.RunID, want, kit.OrNone(r.AsOf), sameInstant(want, r.AsOf))
}

// someAttempts reads the run's attempts and asserts it has any: a check over "every attempt"
// of none would pass for nothing.
func someAttempts(ctx context.Context) ([]kit.NodeAttempt, error) {
	atts, err := kit.RunAttempts(ctx)
	if err != nil {
		return nil, err
	}
	return atts, kit.SceneOf(ctx).St.On("audit.NODE_ATTEMPT.run_id").Assert("attempts of the run", ">= 1", len(atts), len(atts) >= 1)
}

func (startDomain) attemptsReadOnly(ctx context.Context, status string) error {
	sc := kit.SceneOf(ctx)
	atts, err := someAttempts(ctx)
	if err != nil {
		return err
	}
	kit.SortAttempts(atts)
	fx := kit.FixturesOf(ctx)
	for _, a := range atts {
		what := fmt.Sprintf("attempt %d of %s", a.AttemptNo, fx.FixtureName(a.NodeID))
		if err := sc.St.On("audit.NODE_ATTEMPT.status").Equal("status of "+what, status, a.Status); err != nil {
			return err
		}
		rc, err := strconv.Atoi(a.ReadCount)
		if err := sc.St.On("audit.NODE_ATTEMPT.read_count").Assert("read_count of "+what, ">= 0", kit.OrNone(a.ReadCount), err == nil && rc >= 0); err != nil {
			return err
		}
		if err := sc.St.On("audit.NODE_ATTEMPT.written_count").Equal("written_count of "+what, "0", kit.OrNone(a.WrittenCount)); err != nil {
			return err
		}
	}
	return nil
}

func (startDomain) jobLogAsOf(ctx context.Context, want string) error {
	sc := kit.SceneOf(ctx)
	atts, err := someAttempts(ctx)
	if err != nil {
		return err
	}
	fx := kit.FixturesOf(ctx)
	for _, a := range atts {
		rows, err := kit.ReadExact(ctx, sc, target.RoleLog, kit.DecodeJobLogRow, kit.FieldIs("attempt_id", a.NodeAttemptID))
		if err != nil {
			return err
		}
		node := fx.FixtureName(a.NodeID)
		if err := sc.St.On("joblog.attempt_id").Equal("JOB log rows for the attempt of "+node, 1, len(rows)); err != nil {
			return err
		}
		if err := sc.St.On("joblog.as_of").Assert("JOB log as_of for "+node, want, kit.OrNone(rows[0].AsOf), sameInstant(want, rows[0].AsOf)); err != nil {
			return err
		}
	}
	return nil
}
