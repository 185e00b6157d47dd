package schedule

import (
	"context"
	"time"
)

// A process's busy probe (Scheduler.Probe) says whether the process or one of its
// descendants is doing something right now (a thread running, runnable or in disk sleep).
// Silence alone is a guess: a process that computes between a read's answer and its next
// write, starved of a CPU on a loaded machine, or one whose child is still starting, sends
// nothing for the window and yet will send, and releasing another write meanwhile makes the
// set of held writes at the next choice, and so the schedule, depend on the machine's load.
// With a probe a process is quiet only if, besides silence, every look during the window
// found its tree asleep and a look after the window's end confirms it; with a write held, if
// a look since the write came found it asleep (it waits on us, and nothing else of it runs).
// A process without a probe (a party with no process of its own; a system without /proc)
// is judged by silence alone.

// ProbeEvery is how often the probes are looked at: well inside the window, so a process
// busy for a fraction of it is seen. A look at a sleeping Go process costs about 0.1 ms
// (BenchmarkTreeBusy); every 10 ms that was a quarter more CPU for an exploration of
// p2-11-03, every 20 ms a tenth, with the same orders.
const ProbeEvery = 20 * time.Millisecond

type probeState struct {
	busy      func() bool
	busyAt    time.Time // the last look that found it busy (at first: when the probe came)
	sampledAt time.Time // the last look
	asleep    bool      // what the last look found
}

// Probe gives the named process a busy probe (nil: none, silence alone judges it). Call it
// once the process runs; Start looks at it every ProbeEvery until it exits.
func (s *Scheduler) Probe(process string, busy func() bool) {
	if busy == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.procs[process]
	if p == nil {
		p = &procState{last: time.Now()}
		s.procs[process] = p
	}
	p.probe = &probeState{busy: busy, busyAt: time.Now()}
	s.signalLocked()
}

// sample looks at every live probe until ctx ends or the scheduler stops.
func (s *Scheduler) sample(ctx context.Context) {
	t := time.NewTicker(ProbeEvery)
	defer t.Stop()
	type look struct {
		p    *procState
		busy func() bool
	}
	var looks []look
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
		looks = looks[:0]
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		for _, p := range s.procs {
			if p.probe != nil && !p.exited {
				looks = append(looks, look{p, p.probe.busy})
			}
		}
		s.mu.Unlock()
		// Read /proc outside the lock. A look is stamped with the time before it, so that a
		// look stamped after an event saw the process after it.
		now := time.Now()
		busy := make([]bool, len(looks))
		for i, l := range looks {
			busy[i] = l.busy()
		}
		s.mu.Lock()
		wake := false
		for i, l := range looks {
			ps := l.p.probe
			ps.sampledAt, ps.asleep = now, !busy[i]
			if busy[i] {
				ps.busyAt = now
			} else {
				wake = true
			}
		}
		// An asleep look can end a wait (the window's confirming look, a held process
		// settled); a busy one only prolongs it.
		if wake && len(s.held) > 0 {
			s.signalLocked()
		}
		s.mu.Unlock()
	}
}

// probedQuietLocked: the probe's part of p's quiescence at now (p not exited). until is
// when the window ends by time alone (zero: only a look can change it).
func (s *Scheduler) probedQuietLocked(p *procState, now time.Time) (bool, time.Time) {
	ps := p.probe
	if p.held > 0 {
		return ps.asleep && ps.sampledAt.After(p.last), time.Time{}
	}
	since := p.last
	if ps.busyAt.After(since) {
		since = ps.busyAt
	}
	end := since.Add(s.cfg.Window)
	if now.Before(end) {
		return false, end
	}
	return ps.asleep && !ps.sampledAt.Before(end), time.Time{}
}
