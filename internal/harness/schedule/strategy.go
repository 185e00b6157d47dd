package schedule

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
)

// Strategy plans the schedules of an exploration. Plan may be called from several
// workers; Executed reports each schedule that ran, which the systematic strategies need.
type Strategy interface {
	Name() string
	// Plan returns the chooser of schedule n; wait: nothing to plan until a running
	// schedule reports (dfs); neither: the strategy is exhausted.
	Plan(n int) (c Chooser, wait bool)
	Executed(n int, r Result)
}

// NewStrategy makes a strategy by name: random, pct (depth d ≥ 1) or dfs (preemption bound).
func NewStrategy(name string, seed uint64, depth, bound int) (Strategy, error) {
	switch name {
	case "random":
		return &randomStrategy{seed: seed}, nil
	case "pct":
		if depth < 1 {
			return nil, fmt.Errorf("pct needs a depth of at least 1, got %d", depth)
		}
		return &pctStrategy{seed: seed, depth: depth, steps: 8}, nil
	case "dfs":
		if bound < 0 {
			return nil, fmt.Errorf("dfs needs a preemption bound of at least 0, got %d", bound)
		}
		return newDFS(bound), nil
	}
	return nil, fmt.Errorf("unknown strategy %q (want random, pct or dfs)", name)
}

// rngFor is schedule n's own generator: the same seed gives every schedule the same
// choices, whichever worker runs it and in whatever order.
func rngFor(seed uint64, n int) *rand.Rand { return rand.New(rand.NewPCG(seed, uint64(n))) }

// randomStrategy is a seeded random walk that keeps a process going for a while: each
// schedule draws a switch probability p from 1, 1/2, …, 1/32, and at each step the process
// released last goes on with probability 1-p if it has a write held, else a write is drawn
// uniformly among all held. A uniform draw at every step (p = 1) alone almost never lets one
// process run a long stretch ahead of another: on p2-11-03 a poller's START is ~20 writes,
// so a second poller's lock write after the first one's release had a chance of about 2^-20
// per schedule, and 49 schedules of 50 saw one outcome branch.
//
// Every draw is a hash of (seed, schedule, what is drawn for), never a position in a
// stream or an index into the held list: the choice between two writes depends on their
// signatures and on how many writes of that signature the schedule released before, not on
// what else happened to be held or in which order the writes arrived.
type randomStrategy struct{ seed uint64 }

func (r *randomStrategy) Name() string         { return "random" }
func (r *randomStrategy) Executed(int, Result) {}
func (r *randomStrategy) Plan(n int) (Chooser, bool) {
	return &randomChooser{seed: r.seed, n: uint64(n), switchP: switchProbability(r.seed, n), released: map[string]int{}, ran: map[string]int{}}, false
}

// switchLadder are the switch probabilities a random schedule may draw: 2^-k for k = 0…5.
const switchLadder = 6

func switchProbability(seed uint64, n int) float64 {
	k := rngFor(seed, n).IntN(switchLadder)
	return 1 / float64(uint64(1)<<k)
}

type randomChooser struct {
	seed, n  uint64
	switchP  float64
	released map[string]int // signature → writes of it released so far
	ran      map[string]int // process → writes of it released so far
	steps    int            // writes released so far
}

// draw is a uniform number in [0, 1) for the named thing of this schedule.
func (c *randomChooser) draw(parts ...string) float64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], c.seed)
	binary.LittleEndian.PutUint64(b[8:], c.n)
	h.Write(b[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return float64(mix64(h.Sum64())>>11) / (1 << 53)
}

// mix64 is SplitMix64's finalizer: FNV's low bits alone are not uniform enough.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// score of a candidate at this step: its signature and which of its kind it is. The step
// is part of it so that a write that lost once is drawn afresh at the next step.
func (c *randomChooser) score(sig Signature) float64 {
	s := sig.String()
	return c.draw("write", s, strconv.Itoa(c.released[s]), strconv.Itoa(c.steps))
}

func (c *randomChooser) Choose(_ int, cands []Candidate, prev string, _ bool) int {
	pick := func(ok func(Candidate) bool) int {
		best, bestScore := -1, -1.0
		for i, cd := range cands {
			if !ok(cd) {
				continue
			}
			if sc := c.score(cd.Sig); sc > bestScore {
				best, bestScore = i, sc
			}
		}
		return best
	}
	i := -1
	// The coin is drawn per release of the previous process, so where a stretch ends does
	// not depend on what the other processes had held meanwhile.
	if prev != "" && c.draw("stay", prev, strconv.Itoa(c.ran[prev])) >= c.switchP {
		i = pick(func(cd Candidate) bool { return cd.Sig.Process == prev })
	}
	if i < 0 {
		i = pick(func(Candidate) bool { return true })
	}
	c.released[cands[i].Sig.String()]++
	c.ran[cands[i].Sig.Process]++
	c.steps++
	return i
}

// pctStrategy is probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010): every
// process gets a random priority above depth; the highest-priority process with a held
// write goes; at depth-1 random steps (change points) among the expected length the process
// that goes is lowered to priority i, below every initial one. A bug of depth d is found
// with probability at least 1/(n·k^(d-1)) per schedule.
type pctStrategy struct {
	seed  uint64
	depth int
	mu    sync.Mutex
	steps int // the longest schedule seen: where change points are drawn
}

func (p *pctStrategy) Name() string { return fmt.Sprintf("pct(d=%d)", p.depth) }

func (p *pctStrategy) Executed(_ int, r Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.steps = max(p.steps, len(r.Steps))
}

func (p *pctStrategy) Plan(n int) (Chooser, bool) {
	p.mu.Lock()
	k := p.steps
	p.mu.Unlock()
	rng := rngFor(p.seed, n)
	c := &pctChooser{rng: rng, depth: p.depth, prio: map[string]float64{}, change: map[int]int{}}
	for i := 1; i < p.depth; i++ {
		// Distinct change points: a step taken twice would lower one process twice.
		for {
			s := rng.IntN(k)
			if _, taken := c.change[s]; !taken {
				c.change[s] = i
				break
			}
			if len(c.change) >= k {
				break
			}
		}
	}
	return c, false
}

type pctChooser struct {
	rng    *rand.Rand
	depth  int
	prio   map[string]float64 // by process
	change map[int]int        // step → the priority the running process drops to
}

func (c *pctChooser) priority(process string) float64 {
	if p, ok := c.prio[process]; ok {
		return p
	}
	// A process first seen gets a random priority above every change-point priority.
	p := float64(c.depth) + c.rng.Float64()
	c.prio[process] = p
	return p
}

func (c *pctChooser) highest(cands []Candidate) int {
	best := -1
	for i, cd := range cands {
		if best < 0 || c.priority(cd.Sig.Process) > c.priority(cands[best].Sig.Process) {
			best = i
		}
	}
	return best
}

func (c *pctChooser) Choose(step int, cands []Candidate, _ string, _ bool) int {
	// Priorities are assigned in candidate order, which is stable, so a seed decides them.
	for _, cd := range cands {
		c.priority(cd.Sig.Process)
	}
	i := c.highest(cands)
	if low, ok := c.change[step]; ok {
		c.prio[cands[i].Sig.Process] = float64(low) // below every initial priority (> depth)
		i = c.highest(cands)
	}
	return i
}

// dfsStrategy explores every order of the writes up to a preemption bound (CHESS's
// iterative context bounding): a schedule is a prefix of choices forced by signature,
// then the non-preemptive default (keep releasing the previous process while it has a
// write held, else the first candidate). Each executed schedule adds, at each of its steps,
// every other enabled write as a new prefix whose preemptions stay within the bound;
// prefixes planned once are never planned again.
type dfsStrategy struct {
	bound int
	mu    sync.Mutex
	stack [][]Signature
	seen  map[string]bool
	// running counts planned schedules that have not reported; while any runs, an empty
	// stack means "wait", not "done".
	running int
	started bool
}

func newDFS(bound int) *dfsStrategy {
	return &dfsStrategy{bound: bound, seen: map[string]bool{}}
}

func (d *dfsStrategy) Name() string { return fmt.Sprintf("dfs(bound=%d)", d.bound) }

func (d *dfsStrategy) Plan(int) (Chooser, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.started {
		d.started = true
		d.running++
		return &prefixChooser{}, false
	}
	if len(d.stack) == 0 {
		return nil, d.running > 0
	}
	p := d.stack[len(d.stack)-1]
	d.stack = d.stack[:len(d.stack)-1]
	d.running++
	return &prefixChooser{prefix: p}, false
}

func (d *dfsStrategy) Executed(_ int, r Result) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.running--
	steps := r.Steps
	// Push shallow alternatives first so the deepest is tried next (depth first).
	for i, st := range steps {
		prefix := make([]Signature, i, i+1)
		for j := 0; j < i; j++ {
			prefix[j] = steps[j].Sig
		}
		pre := preemptions(steps[:i])
		for k, alt := range st.Enabled {
			if k == st.Chosen {
				continue
			}
			n := pre
			if i > 0 && isPreemption(steps[i-1].Sig.Process, alt.Process, st.Enabled) {
				n++
			}
			if n > d.bound {
				continue
			}
			p := append(slices.Clone(prefix), alt)
			key := Order(p)
			if d.seen[key] {
				continue
			}
			d.seen[key] = true
			d.stack = append(d.stack, p)
		}
		d.seen[Order(append(slices.Clone(prefix), st.Sig))] = true
	}
}

// isPreemption: releasing a write of next while prev (the process released last) still
// had one held is a preemption; switching because prev had none is not.
func isPreemption(prev, next string, enabled []Signature) bool {
	if prev == next {
		return false
	}
	for _, e := range enabled {
		if e.Process == prev {
			return true
		}
	}
	return false
}

func preemptions(steps []Step) int {
	n := 0
	for i := 1; i < len(steps); i++ {
		if isPreemption(steps[i-1].Sig.Process, steps[i].Sig.Process, steps[i].Enabled) {
			n++
		}
	}
	return n
}

// prefixChooser releases the prefix's signatures in order (waiting for each to be held),
// then follows the non-preemptive default. With a whole schedule as its prefix it is the
// replay of that schedule.
type prefixChooser struct{ prefix []Signature }

func (c *prefixChooser) Choose(step int, cands []Candidate, prev string, must bool) int {
	if step < len(c.prefix) {
		want := c.prefix[step].String()
		for i, cd := range cands {
			if cd.Sig.String() == want {
				return i
			}
		}
		if !must {
			return -1
		}
	}
	for i, cd := range cands {
		if cd.Sig.Process == prev {
			return i
		}
	}
	return 0
}

// Replay is the chooser that releases schedule's writes in its order.
func Replay(schedule []Signature) Chooser { return &prefixChooser{prefix: schedule} }
