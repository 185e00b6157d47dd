package schedule

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
)

// The named waits of the scheduler (FLOWTEST_TIMEOUT_SCALE stretches them like every limit).
var (
	// Quiescence: a process that sent nothing and has nothing in flight for this long is
	// taken to be waiting on the scheduler or done (a FlowNet step between two requests
	// takes milliseconds; a loaded 2-core machine needs the room).
	Quiescence = wait.Limit{Name: "ExploreQuiescence", Base: 400 * time.Millisecond, Interval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond}
	// QuiescenceLimit: the longest the scheduler waits for quiescence (or, replaying, for
	// the write the schedule names next) with writes held; then it releases anyway and
	// counts it as forced, so a process polling in a loop cannot stall a schedule.
	QuiescenceLimit = wait.Limit{Name: "ExploreQuiescenceLimit", Base: 10 * time.Second, Interval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond}
	// ReplayPatience: how long a quiescent scenario waits for the write a replay names next
	// before the replay diverges (releases by the default order): at quiescence only a
	// process that woke up by itself could still send it.
	ReplayPatience = wait.Limit{Name: "ExploreReplayPatience", Base: 2 * time.Second, Interval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond}
)

// ScheduledRoles are the app roles whose writes are scheduled; other writes pass.
var ScheduledRoles = []string{"state", "audit", "request"}

var recordsPath = regexp.MustCompile(`^/k/v1/(guest/\d+/)?records?\.json$`)

// Config configures one schedule's scheduler.
type Config struct {
	// Roles maps app ids (as sent) to roles; writes to apps of ScheduledRoles are held.
	Roles map[string]string
	// Chooser picks the write to release at each step.
	Chooser Chooser
	// Expect are the processes the scenario will start (the manifest's explore
	// processes): until each has its gate, the scenario is not quiescent, so the first
	// process to start cannot have its writes released before the others exist.
	Expect []string
	// Window, Limit and Patience default to Quiescence, QuiescenceLimit and
	// ReplayPatience at scale 1.
	Window, Limit, Patience time.Duration
}

// Step is one released write of a schedule.
type Step struct {
	Sig Signature `json:"signature"`
	// Enabled are the signatures of every write held when this one was chosen (sorted),
	// so a strategy can tell which other orders were possible here.
	Enabled []Signature `json:"enabled"`
	Chosen  int         `json:"chosen"` // index into Enabled
	// Forced: released without quiescence (QuiescenceLimit ran out), or without the
	// write a replay named (Diverged).
	Forced   bool `json:"forced,omitempty"`
	Diverged bool `json:"diverged,omitempty"`
	Status   int  `json:"status"` // kintone's answer; 0 when the request failed (or none came)
	Write    int  `json:"write"`  // its index in Result.Writes
}

// Write is one scheduled write as it went: for the invariant checkers.
type Write struct {
	Seq      int `json:"seq"`
	Sig      Signature
	RecordID string `json:"record_id,omitempty"`
	// RecordKey is the full key (scope-derived; relates writes within one run only).
	RecordKey string `json:"record_key,omitempty"`
	Revision  string `json:"revision,omitempty"`
	// Values are the judged fields' values of the write (judgedFields), nothing else.
	Values   map[string]string `json:"values,omitempty"`
	Status   int               `json:"status"`
	Released time.Time
	Answered time.Time
	// Sent and Answer are the positions, in one count over every proxy of the run, at which a
	// proxy forwarded the write to kintone and saw kintone's answer (flowtest run; zero under
	// explore, whose gate releases one write at a time). Writes are ordered by Answer; two
	// that overlapped (each sent before the other's answer) may have been applied in the
	// other order.
	Sent, Answer uint64 `json:"-"`
}

// Candidate is a held write as a chooser sees it.
type Candidate struct {
	Sig Signature
}

// Chooser picks one of the candidates (sorted by signature, then arrival) at a step. prev
// is the process of the previous release ("" at the first). It returns -1 to wait for a
// write not held yet (a replay); when must is set (the wait ran out) it has to choose.
type Chooser interface {
	Choose(step int, cands []Candidate, prev string, must bool) int
}

// Scheduler orders the writes of one run of a scenario. Install Gate(name) on the proxy
// of each scheduled process; Start runs the loop; Stop lets everything go and returns
// what was released.
type Scheduler struct {
	cfg Config

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every event
	procs   map[string]*procState
	held    []*heldWrite
	seq     int
	steps   []Step
	writes  []Write
	stopped bool
	started bool
	done    chan struct{}
}

type procState struct {
	inflight int       // requests admitted or released and not answered; held ones excluded
	held     int       // writes held now
	last     time.Time // last arrival or answer
	exited   bool
	sent     bool        // it sent a request: an expected process that has not is still starting
	probe    *probeState // nil: judged by silence alone (probe.go)
}

type heldWrite struct {
	seq     int
	process string
	sig     Signature
	req     faultproxy.GateRequest
	go_     chan bool // true: forward; false: drop (scheduler stopped is forward too)
	answer  chan int
	write   int // index in the history once released
}

// New makes a scheduler; nothing is held until a gate is installed and Start runs.
func New(cfg Config) *Scheduler {
	if cfg.Window <= 0 {
		cfg.Window = Quiescence.Base
	}
	if cfg.Limit <= 0 {
		cfg.Limit = QuiescenceLimit.Base
	}
	if cfg.Patience <= 0 {
		cfg.Patience = ReplayPatience.Base
	}
	return &Scheduler{cfg: cfg, changed: make(chan struct{}), procs: map[string]*procState{}, done: make(chan struct{})}
}

// WithScale sets Window and Limit from the named limits at ctx's scale.
func (c Config) WithScale(ctx context.Context) Config {
	c.Window, c.Limit, c.Patience = Quiescence.In(ctx), QuiescenceLimit.In(ctx), ReplayPatience.In(ctx)
	return c
}

func (s *Scheduler) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Gate is the gate for the proxy of the named process; the process counts as live from now.
func (s *Scheduler) Gate(process string) faultproxy.Gate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procs[process] == nil {
		s.procs[process] = &procState{last: time.Now()}
	}
	return gate{s, process}
}

// Exited marks a process as gone (it holds nothing and will send nothing).
func (s *Scheduler) Exited(process string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[process]; p != nil {
		p.exited = true
		s.signalLocked()
	}
}

type gate struct {
	s       *Scheduler
	process string
}

func (g gate) Begin(ctx context.Context, r faultproxy.GateRequest) (func(int), error) {
	return g.s.begin(ctx, g.process, r)
}

// scheduled says whether r is a write the scheduler holds (in the app role), and timer:
// it is a heartbeat, which is never held but kept in the history for the checkers. A
// heartbeat's moment is set by the process's clock, not by what it was answered: holding it
// would make each schedule depend on how long the releases before it took (the claim
// heartbeat every second on p2-11-03 came or did not, and 20 of 50 schedules of one seed
// differed from the same seed's run before), and a held lease heartbeat can let the lease run
// out under a slow schedule, which no real order does.
func (s *Scheduler) scheduled(r faultproxy.GateRequest) (role string, hold, timer bool) {
	if !r.IsWrite() || !recordsPath.MatchString(r.Path) {
		return "", false, false
	}
	role = s.cfg.Roles[r.App]
	if !slices.Contains(ScheduledRoles, role) {
		return role, false, false
	}
	if isHeartbeat(r) {
		return role, false, true
	}
	return role, true, false
}

// isHeartbeat: a lease heartbeat (the proxy tells it by its heartbeat_at) or a claim's, a
// PUT of claim_heartbeat_at alone (product-contract §1.10).
func isHeartbeat(r faultproxy.GateRequest) bool {
	if r.Heartbeat {
		return true
	}
	return r.Method == "PUT" && len(r.Fields) == 1 && r.Fields[0] == "claim_heartbeat_at"
}

func (s *Scheduler) begin(ctx context.Context, process string, r faultproxy.GateRequest) (func(int), error) {
	role, hold, timer := s.scheduled(r)
	s.mu.Lock()
	p := s.procs[process]
	p.last = time.Now()
	p.sent = true
	if !hold || s.stopped {
		p.inflight++
		w := -1
		if hold || timer {
			// Released without a choice (after Stop, or a heartbeat): still part of the
			// history.
			w = s.recordLocked(process, role, r)
		}
		s.signalLocked()
		s.mu.Unlock()
		return s.answerFunc(process, w, nil), nil
	}
	h := &heldWrite{write: -1, seq: s.seq, process: process, sig: signatureOf(process, role, r), req: r, go_: make(chan bool, 1), answer: make(chan int, 1)}
	s.seq++
	p.held++
	s.held = append(s.held, h)
	s.signalLocked()
	s.mu.Unlock()

	select {
	case forward := <-h.go_:
		if !forward {
			return nil, errors.New("explore: the schedule ended")
		}
		return s.answerFunc(process, h.write, h.answer), nil
	case <-ctx.Done():
		s.mu.Lock()
		s.dropHeldLocked(h)
		s.mu.Unlock()
		return nil, ctx.Err()
	}
}

// recordLocked adds a write to the history, released now, and returns its index.
func (s *Scheduler) recordLocked(process, role string, r faultproxy.GateRequest) int {
	s.writes = append(s.writes, Write{Seq: len(s.writes), Sig: signatureOf(process, role, r), RecordID: r.RecordID,
		RecordKey: r.RecordKey, Revision: r.Revision, Values: judged(r.Values), Released: time.Now()})
	return len(s.writes) - 1
}

// judgedFields are the fields whose values the invariant checkers read: identities and
// states, never a reason, a message or a token.
var judgedFields = []string{"run_id", "status", "lifecycle_status", "request_state", "result_code", "claimed_at", "record_type"}

// JudgedFields are the fields whose values the invariant checkers read (a copy): what a
// fault proxy keeps of a write for them (faultproxy.Options.Judged).
func JudgedFields() []string { return slices.Clone(judgedFields) }

// WriteOf is a write of process to an app of role as a fault proxy logged it (r its gate
// view), for the invariant checkers of an unscheduled run: seq is its place in the history,
// status kintone's answer (0: none, or the write never reached kintone).
func WriteOf(seq int, process, role string, r faultproxy.GateRequest, status int) Write {
	return Write{Seq: seq, Sig: signatureOf(process, role, r), RecordID: r.RecordID, RecordKey: r.RecordKey,
		Revision: r.Revision, Values: judged(r.Values), Status: status}
}

func judged(values map[string]string) map[string]string {
	var out map[string]string
	for _, f := range judgedFields {
		if v, ok := values[f]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[f] = v
		}
	}
	return out
}

// answerFunc is the gate's done for a request of process; seq is its write's index (-1: a
// request outside the history), answer the released write's channel to the loop.
func (s *Scheduler) answerFunc(process string, seq int, answer chan int) func(int) {
	return func(status int) {
		s.mu.Lock()
		p := s.procs[process]
		p.inflight--
		p.last = time.Now()
		if seq >= 0 {
			s.writes[seq].Status = status
			s.writes[seq].Answered = time.Now()
		}
		s.signalLocked()
		s.mu.Unlock()
		if answer != nil {
			answer <- status
		}
	}
}

// releaseLocked takes h off the held list as a request in flight: from now until its
// answer the process is busy.
func (s *Scheduler) releaseLocked(h *heldWrite) {
	s.dropHeldLocked(h)
	s.procs[h.process].inflight++
}

func (s *Scheduler) dropHeldLocked(h *heldWrite) {
	if i := slices.Index(s.held, h); i >= 0 {
		s.held = slices.Delete(s.held, i, i+1)
		s.procs[h.process].held--
		s.signalLocked()
	}
}

// quiescentLocked: writes are held and every process has one held, has exited, or has
// nothing in flight and sent nothing for the window; a process with a busy probe must also
// have been seen asleep (probedQuietLocked). until is when that could next change by time
// alone (zero: only an event, or a look of a probe, can change it).
func (s *Scheduler) quiescentLocked(now time.Time) (bool, time.Time) {
	if len(s.held) == 0 {
		return false, time.Time{}
	}
	var until time.Time
	quiet := true
	for _, name := range s.cfg.Expect {
		// Not started yet (its Gate call is an event), or started and not at its first
		// request yet (a process starting on a loaded machine takes longer than the window).
		if p := s.procs[name]; p == nil || !p.sent && !p.exited {
			quiet = false
		}
	}
	later := func(t time.Time) {
		if !t.IsZero() && (until.IsZero() || t.Before(until)) {
			until = t
		}
	}
	for _, p := range s.procs {
		switch {
		case p.exited:
		case p.probe != nil && (p.held > 0 || p.inflight == 0):
			// Silence and the tree's state (probe.go).
			q, t := s.probedQuietLocked(p, now)
			quiet = quiet && q
			later(t)
		case p.held > 0:
		case p.inflight > 0:
			quiet = false
		case now.Sub(p.last) < s.cfg.Window:
			quiet = false
			later(p.last.Add(s.cfg.Window))
		}
	}
	return quiet, until
}

// candidatesLocked are the held writes in a stable order: signature, then arrival.
func (s *Scheduler) candidatesLocked() []*heldWrite {
	hs := slices.Clone(s.held)
	slices.SortStableFunc(hs, func(a, b *heldWrite) int {
		if c := strings.Compare(a.sig.String(), b.sig.String()); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	return hs
}

// Start runs the scheduling loop until Stop or ctx ends.
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	go func() {
		defer close(s.done)
		s.loop(ctx)
	}()
	go s.sample(ctx) // probe.go
}

func (s *Scheduler) loop(ctx context.Context) {
	prev := ""
	for step := 0; ; step++ {
		h, st, ok := s.next(ctx, step, prev)
		if !ok {
			return
		}
		prev = h.process
		s.mu.Lock()
		h.write = s.recordLocked(h.process, h.sig.Role, h.req)
		st.Write = h.write
		// Recorded on release: the process may have its answer and exit (and the scenario
		// stop the scheduler) before this loop hears of it.
		s.steps = append(s.steps, st)
		s.mu.Unlock()
		h.go_ <- true
		select {
		case <-h.answer:
		case <-ctx.Done():
			return
		}
	}
}

// next waits for quiescence and takes the write the chooser picks off the held list.
func (s *Scheduler) next(ctx context.Context, step int, prev string) (*heldWrite, Step, bool) {
	var firstHeld, chooserWaits time.Time // since when writes are held; the chooser waits
	for {
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return nil, Step{}, false
		}
		now := time.Now()
		if len(s.held) > 0 && firstHeld.IsZero() {
			firstHeld = now
		}
		quiet, until := s.quiescentLocked(now)
		late := !firstHeld.IsZero() && now.Sub(firstHeld) >= s.cfg.Limit ||
			quiet && !chooserWaits.IsZero() && now.Sub(chooserWaits) >= s.cfg.Patience
		if quiet || late {
			cands := s.candidatesLocked()
			cs := make([]Candidate, len(cands))
			for i, h := range cands {
				cs[i] = Candidate{Sig: h.sig}
			}
			i := s.cfg.Chooser.Choose(step, cs, prev, late)
			if i >= 0 && i < len(cands) {
				h := cands[i]
				s.releaseLocked(h)
				st := Step{Sig: h.sig, Chosen: i, Forced: late && !quiet, Diverged: late && !chooserWaits.IsZero()}
				for _, c := range cs {
					st.Enabled = append(st.Enabled, c.Sig)
				}
				s.mu.Unlock()
				return h, st, true
			}
			// The chooser waits for a write not held yet: until the limit, then it must.
			if chooserWaits.IsZero() {
				chooserWaits = now
			}
			for _, t := range []time.Time{firstHeld.Add(s.cfg.Limit), chooserWaits.Add(s.cfg.Patience)} {
				if until.IsZero() || t.Before(until) {
					until = t
				}
			}
		} else if !firstHeld.IsZero() {
			if t := firstHeld.Add(s.cfg.Limit); until.IsZero() || t.Before(until) {
				until = t
			}
		}
		changed := s.changed
		s.mu.Unlock()
		if !awaitChange(ctx, changed, now, until) {
			return nil, Step{}, false
		}
	}
}

// awaitChange waits for an event, or for until (zero: no deadline); false when ctx ended.
func awaitChange(ctx context.Context, changed <-chan struct{}, now, until time.Time) bool {
	var timer <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(max(until.Sub(now), time.Millisecond))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-changed:
	case <-timer:
	case <-ctx.Done():
		return false
	}
	return true
}

// Result is what one scheduled run released.
type Result struct {
	Steps  []Step  `json:"steps"`
	Writes []Write `json:"writes"`
	// Forced counts steps released without quiescence.
	Forced int `json:"forced"`
}

// Schedule is the signatures of the released writes, in order.
func (r Result) Schedule() []Signature {
	out := make([]Signature, len(r.Steps))
	for i, st := range r.Steps {
		out[i] = st.Sig
	}
	return out
}

// Stop ends scheduling: every held write and every later one is forwarded at once (the
// scenario's own cleanup must be able to write), and the result is returned.
func (s *Scheduler) Stop() Result {
	s.mu.Lock()
	if !s.stopped {
		s.stopped = true
		for _, h := range s.held {
			h.write = s.recordLocked(h.process, h.sig.Role, h.req)
			s.procs[h.process].held--
			s.procs[h.process].inflight++
			h.go_ <- true
		}
		s.held = nil
		s.signalLocked()
	}
	s.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Result{Steps: slices.Clone(s.steps), Writes: slices.Clone(s.writes)}
	for i, st := range r.Steps {
		r.Steps[i].Status = r.Writes[st.Write].Status
		if st.Forced || st.Diverged {
			r.Forced++
		}
	}
	return r
}

// Wait blocks until the loop has ended (after Stop or the end of Start's ctx); without
// Start it returns at once.
func (s *Scheduler) Wait() {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.done
	}
}
