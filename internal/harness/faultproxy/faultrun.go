package faultproxy

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// AddFault arms a fault. Its id must be new for this proxy (a removed or control-file
// fault's id stays taken, so firings always name one definition).
func (p *Proxy) AddFault(f Fault) error {
	c, err := compileFault(f)
	if err != nil {
		return err
	}
	if f.Delay > p.opts.BarrierTimeout {
		return fmt.Errorf("fault %s: delay %s exceeds the proxy's hold bound %s", f.ID, f.Delay, p.opts.BarrierTimeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.faultStates[f.ID]; ok {
		return fmt.Errorf("fault %s: id already used on proxy %s", f.ID, p.opts.Name)
	}
	st := &faultState{c: c}
	p.faultStates[f.ID] = st
	p.faults = append(p.faults, st)
	return nil
}

// RemoveFault disarms an in-process fault; its firings stay in Firings.
func (p *Proxy) RemoveFault(id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.faultStates[id]
	if st == nil || st.fromFile {
		return fmt.Errorf("remove fault %s: no such in-process fault on proxy %s", id, p.opts.Name)
	}
	p.faults = slices.DeleteFunc(p.faults, func(s *faultState) bool { return s == st })
	return nil
}

// Firings lists every fault firing so far, in order (at most the first 20000).
func (p *Proxy) Firings() []Firing {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.firings)
}

// FaultFirings lists the firings of fault id, in order.
func (p *Proxy) FaultFirings(id string) []Firing {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faultFiringsLocked(id)
}

func (p *Proxy) faultFiringsLocked(id string) []Firing {
	var out []Firing
	for _, f := range p.firings {
		if f.FaultID == id {
			out = append(out, f)
		}
	}
	return out
}

// WaitFirings waits until fault id has fired at least n times and returns its firings.
// Without a deadline in ctx it waits at most DefaultArrivalWait. The id may belong to
// a control-file fault not read yet.
func (p *Proxy) WaitFirings(ctx context.Context, id string, n int) ([]Firing, error) {
	ctx, cancel := withDefaultWait(ctx)
	defer cancel()
	for {
		p.refreshControl() // a file fault fires only on traffic, but its definition may be new
		p.mu.Lock()
		got := p.faultFiringsLocked(id)
		changed := p.firingsChanged
		p.mu.Unlock()
		if len(got) >= n {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			c := p.Counts()
			return got, fmt.Errorf("waiting for fault %s to fire %d times on proxy %s: %w (it fired %d times; proxy saw %d requests, %d blocked)",
				id, n, p.opts.Name, context.Cause(ctx), len(got), c.Total, c.Blocked)
		case <-p.closed:
			return p.FaultFirings(id), fmt.Errorf("waiting for fault %s to fire %d times: proxy %s closed (it fired %d times)", id, n, p.opts.Name, len(got))
		}
	}
}

// takeFaultLocked counts the request against every armed fault it matches and returns
// the take of the first (in order added, in-process before control file) whose window
// includes it. At most one fault acts on a request.
func (p *Proxy) takeFaultLocked(v *requestView, entry *trafficEntry) *faultTake {
	var take *faultTake
	for _, set := range [][]*faultState{p.faults, p.fileFaults} {
		for _, st := range set {
			if st.exhausted() || !st.c.matches(v) {
				continue
			}
			st.matched++
			if take == nil && st.matched >= st.c.first {
				st.taken++
				take = &faultTake{c: st.c, match: st.matched, entry: entry}
				entry.Fault, entry.FaultAction = st.c.f.ID, st.c.f.Action
			}
		}
	}
	return take
}

// fired records the take's firing (once) and wakes WaitFirings.
func (p *Proxy) fired(t *faultTake, status int, errText string) {
	if t == nil || t.applied {
		return
	}
	t.applied = true
	f := Firing{At: time.Now().UTC(), FaultID: t.c.f.ID, Action: t.c.f.Action, Match: t.match,
		Method: t.entry.Method, Path: t.entry.Path, App: t.entry.App, RecordID: t.entry.RecordID, RecordKey: t.entry.RecordKey, Status: status, Error: errText}
	p.mu.Lock()
	if len(p.firings) < maxTrafficLines {
		p.firings = append(p.firings, f)
	}
	close(p.firingsChanged)
	p.firingsChanged = make(chan struct{})
	p.mu.Unlock()
}

// applyBeforeForward runs the take's action up to forwarding; false means the request
// is answered (respond) or dropped and must not be forwarded.
func (p *Proxy) applyBeforeForward(w http.ResponseWriter, r *http.Request, t *faultTake, start time.Time) bool {
	c := t.c
	switch c.f.Action {
	case ActionRespond:
		body := c.responseBody()
		t.entry.Status = c.status
		p.fired(t, c.status, "")
		p.logTraffic(t.entry, start)
		h := w.Header()
		h.Set("Content-Type", c.contentType)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(c.status)
		_, _ = w.Write(body)
		return false
	case ActionReset:
		p.fired(t, 0, "")
		p.logTraffic(t.entry, start)
		drop(w)
		return false
	case ActionDelay:
		p.fired(t, 0, "")
		if err := p.delay(r.Context(), c.f.ID, c.f.Delay); err != nil {
			t.entry.Error = err.Error()
			p.logTraffic(t.entry, start)
			drop(w)
			return false
		}
	}
	return true
}

// delay holds a request for d; the client going away or the proxy closing ends the hold.
func (p *Proxy) delay(ctx context.Context, id string, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return &faultError{id: id, reason: "client went away while delayed"}
	case <-p.closed:
		return &faultError{id: id, reason: "proxy closed while delayed"}
	}
}
