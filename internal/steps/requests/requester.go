package requests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
)

// requesterDomain: the requester on the request board as a named party of its own, racing
// the pollers. Its cancel is the request board's revision-fenced PUT (lifecycle.go), sent in
// the background through a fault proxy of its own, so that `flowtest explore` orders it
// against a poller's claim exactly as it orders two processes' writes (proxy/explore.go: the proxy's
// gate is the scheduler's, and the end of the cancel counts as the party's exit). The
// scenario waits for its answer, then judges the race by what each side saw.
type requesterDomain struct{}

func (d requesterDomain) register(reg stepdef.Registry) {
	reg.Step(`^the requester cancels `+reqRef+` on the request board in the background as "([^"]+)", with the revision it was created at$`, d.cancelInTheBackground)
	reg.Step(`^the requester's cancel was answered 200 or 409$`, d.cancelAnswered)
	reg.Step(`^`+reqRef+` settled the race of the requester's cancel and the claim of "([^"]+)", "([^"]+)" polling after both: `+raceAlternatives+`$`, d.raceSettled)
}

// raceAlternatives are the two outcomes of the race (product-contract §1.10, scenarios.md
// §2.7.2): whichever revision-fenced PUT kintone applies first wins, the other is refused.
const raceAlternatives = `cancel won \(the cancel answered 200, CANCELLED / CANCELLED_BY_REQUESTER, never claimed, no run invocation\) or claim won \(the cancel answered 409, DONE or REJECTED never CANCELLED, one run\)`

// backgroundCancel is one background cancel: what it sent and, once done is closed, what kintone
// answered.
type backgroundCancel struct {
	name     string // the party's name ("requester")
	request  *madeRequest
	revision string
	done     chan struct{}
	mu       sync.Mutex
	status   int   // kintone's HTTP answer; 0: none came
	err      error // a failure that is no kintone answer
}

func (b *backgroundCancel) answer() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.status, b.err
}

// requesterState: the scenario's background cancels, in start order.
type requesterState struct {
	cancels []*backgroundCancel
}

var requesterKey = scenario.NewKey[requesterState]("requester")

// only is the one background cancel of the scenario (the steps speak of "the requester's").
func (rs *requesterState) only() (*backgroundCancel, error) {
	switch len(rs.cancels) {
	case 0:
		return nil, fmt.Errorf("no requester cancels in the background in this scenario (missing: the requester cancels request … in the background as …)")
	case 1:
		return rs.cancels[0], nil
	}
	return nil, fmt.Errorf("%d requesters cancel in the background: the steps speak of one", len(rs.cancels))
}

// cancelInTheBackground starts the requester as a named party: a fault proxy of its own
// (its gate the scheduler's in an explored run), the scope's guarded request client through
// it, and one goroutine sending the board's cancel PUT with the revision read at creation.
// The step returns at once; the cleanup ends the goroutine (and the proxy after it, LIFO).
func (requesterDomain) cancelInTheBackground(ctx context.Context, ref, name string) error {
	sc := kit.SceneOf(ctx)
	m, err := requestsOf(ctx).find(ref)
	if err != nil {
		return err
	}
	if err := kit.ProcessesOf(ctx).AddRequester(ctx, name); err != nil {
		return err
	}
	dir := filepath.Join(sc.St.WorkDir, "proxy-"+kit.ProcFileName(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	opts, bundle, err := proxy.ScenarioProxyOptions(sc, kit.ProcFileName(name), dir, "")
	if err != nil {
		return err
	}
	// The guarded client counts what it sends itself (as the harness's); the proxy would
	// count the same requests a second time.
	opts.Counter = nil
	p, err := faultproxy.New(opts)
	if err != nil {
		return fmt.Errorf("fault proxy for %q: %w", name, err)
	}
	st := sc.St
	st.Defer("close the fault proxy of "+name, func(context.Context) error { return proxy.CloseAndRecord(st, name, p) })
	proxy.JudgeWritesOf(st, name, p)
	if g := proxy.ExploredGate(st, name); g != nil {
		p.SetGate(g)
	}
	cas := []string{sc.Suite.Target.CAFile}
	if p.CAFile() != "" {
		cas = []string{bundle}
	}
	g, err := requestGuard(ctx, p.URL(), cas...)
	if err != nil {
		return err
	}
	b := &backgroundCancel{name: name, request: m, revision: m.revision, done: make(chan struct{})}
	rs := requesterKey.Of(st)
	rs.cancels = append(rs.cancels, b)
	// The party outlives this step (its values stay: the scene, the counter); the cleanup
	// cancels what is still held or in flight.
	bctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(b.done)
		status, err := sendBoardCancel(bctx, g, m, b.revision)
		b.mu.Lock()
		b.status, b.err = status, err
		b.mu.Unlock()
	}()
	proxy.WatchExploredExit(st, name, b.done, nil) // proxy/explore.go: no process of its own
	st.Defer("end the background cancel of "+name, func(ctx context.Context) error {
		stop()
		select {
		case <-b.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("the background cancel of %s did not end: %w", name, ctx.Err())
		}
	})
	fmt.Fprintf(st.Log, "  %s cancels request %q in the background through %s (revision %s)\n", name, m.name, p.URL(), b.revision)
	return nil
}

// cancelAnswered waits for the background cancel's answer and compares it with the two a
// revision-fenced PUT can get in this race: 200 (it landed first) or 409 (the claim did).
func (requesterDomain) cancelAnswered(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	b, err := requesterKey.Of(sc.St).only()
	if err != nil {
		return err
	}
	err = wait.For(ctx, wait.RequestState, "the background cancel of "+b.name+" to be answered", func(context.Context) (bool, string, error) {
		select {
		case <-b.done:
			return true, "answered", nil
		default:
			return false, "in flight or held", nil
		}
	})
	if err != nil {
		return err
	}
	status, err := b.answer()
	if err != nil {
		return err
	}
	sc.St.Note("board cancel of request "+b.request.name+" by "+b.name, fmt.Sprintf("PUT cancel_requested at revision %s in the background: HTTP %d", b.revision, status))
	return sc.St.On("harness.request.board-put").Assert(fmt.Sprintf("HTTP status of the background cancel PUT of request %s at revision %s", b.request.name, b.revision),
		"200 or 409", status, status == 200 || status == 409)
}

// raceSettled judges the race by everything each side left: the cancel's answer, the
// request record, both pollers' counters, the runs of the request's key and the invocations
// it requested. The cancel's answer says which side kintone applied first; each alternative
// is the whole expected picture compared with the seen one:
//
//   - cancel won (200): the request CANCELLED / CANCELLED_BY_REQUESTER, withdrawn, never
//     claimed, no run and no invocation. Either poller 1 read it after the cancel and
//     cancelled it itself, or poller 1 read it before, its claim lost on revision and poller 2
//     cancelled it (a free run mostly sees the first: the cancel is one PUT, the poller a
//     process; an explored one only the second, as the scheduler holds the cancel until the
//     poller's claim is held too).
//   - claim won (409): poller 1 claimed and completed it, DONE or REJECTED, not withdrawn (the
//     cancel never landed), one run of the key and one invocation the request caused.
func (requesterDomain) raceSettled(ctx context.Context, ref, first, second string) error {
	sc := kit.SceneOf(ctx)
	b, err := requesterKey.Of(sc.St).only()
	if err != nil {
		return err
	}
	select {
	case <-b.done:
	default:
		return fmt.Errorf("the background cancel of %s was not answered yet (missing: the requester's cancel was answered 200 or 409)", b.name)
	}
	status, err := b.answer()
	if err != nil {
		return err
	}
	m, r, err := readNamedRequest(ctx, ref)
	if err != nil {
		return err
	}
	var counts [2]map[string]int
	for i, name := range []string{first, second} {
		c, err := finishedPoller(ctx, name)
		if err != nil {
			return err
		}
		if counts[i], err = counters(c); err != nil {
			return err
		}
	}
	runs, err := kit.ReadExact(ctx, sc, target.RoleState, kit.DecodeNetworkRun, kit.FieldIs("record_type", "NETWORK_RUN"), kit.FieldIs("network_id", m.networkID), kit.FieldIs("business_key", m.businessKey))
	if err != nil {
		return err
	}
	invocations := "creator (none)" // without 作成者 no correlation exists to look for
	if r.Creator != "" {
		by := "app-request:" + r.RecordID + ":" + kit.EncodeURIComponent(r.Creator)
		invs, err := kit.ReadExact(ctx, sc, target.RoleAudit, kit.DecodeRunInvocation, kit.FieldIs("record_type", "RUN_INVOCATION"), kit.FieldIs("requested_by", by))
		if err != nil {
			return err
		}
		invocations = fmt.Sprint(len(invs))
	}
	claimed := "(none)"
	if r.ClaimedAt != "" {
		claimed = "set"
	}
	picture := func(cancel int, outcome string, withdrawn bool, claimedAt string, runs int, invs string, p1, p2 [2]int) string {
		return fmt.Sprintf("cancel %d | %s | cancel_requested %t | claimed_at %s | runs %d | invocations %s | %s claimed=%d cancelled=%d | %s claimed=%d cancelled=%d",
			cancel, outcome, withdrawn, claimedAt, runs, invs, first, p1[0], p1[1], second, p2[0], p2[1])
	}
	pair := func(c map[string]int) [2]int { return [2]int{c["claimed"], c["cancelled"]} }
	outcome := kit.OrNone(r.RequestState) + "/" + kit.OrNone(r.ResultCode)
	seen := picture(status, outcome, r.CancelRequested, claimed, len(runs), invocations, pair(counts[0]), pair(counts[1]))

	var branch, want string
	switch {
	case status == 200 && counts[0]["cancelled"] > 0:
		branch = "cancel won, " + first + " read it withdrawn"
		want = picture(200, "CANCELLED/CANCELLED_BY_REQUESTER", true, "(none)", 0, "0", [2]int{0, 1}, [2]int{0, 0})
	case status == 200:
		branch = "cancel won, the claim lost on revision"
		want = picture(200, "CANCELLED/CANCELLED_BY_REQUESTER", true, "(none)", 0, "0", [2]int{0, 0}, [2]int{0, 1})
	default:
		branch = "claim won"
		ended := "DONE or REJECTED"
		if r.RequestState == "DONE" || r.RequestState == "REJECTED" {
			ended = outcome // the result code is the run's; only the state is the race's
		}
		want = picture(409, ended, false, "set", 1, "1", [2]int{1, 0}, [2]int{0, 0})
	}
	// Which of the alternatives held: `flowtest explore` counts the branches.
	sc.St.Note(schedule.BranchNote, branch)
	what := fmt.Sprintf("outcome of the race of the requester's cancel and the claim of %s, request %s", first, m.name)
	if err := sc.St.On("request.request_state", "request.result_code").Equal(what, branch+": "+want, branch+": "+seen); err != nil {
		return fmt.Errorf("%w (result message: %s)", err, kit.OrNone(strings.TrimSpace(r.ResultMessage)))
	}
	return nil
}
