package faultproxy

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

type trafficEntry struct {
	At     time.Time `json:"at"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	// App, RecordID, RecordKey and Fields say what the request touched: the app and record
	// id (JSON body's top-level app/id, or the app/id query parameters of a GET, values only
	// — never the query string), the value of the body's updateKey (the record a PUT by
	// updateKey names: FlowNet's record_key, a canonical key, never business data), and the
	// field names under record (or records[].record), sorted; never a value under record.
	App        string   `json:"app,omitempty"`
	RecordID   string   `json:"record_id,omitempty"`
	RecordKey  string   `json:"record_key,omitempty"`
	Fields     []string `json:"fields,omitempty"`
	Targeted   bool     `json:"targeted"`
	Blocked    bool     `json:"blocked"`
	Heartbeat  bool     `json:"heartbeat"`
	Status     int      `json:"status,omitempty"`
	DurationMS float64  `json:"duration_ms"`
	Error      string   `json:"error,omitempty"`
	// Fault and FaultAction name the fault that took the request (see Firing).
	Fault       string `json:"fault,omitempty"`
	FaultAction Action `json:"fault_action,omitempty"`
	// Fenced: whether a PUT or DELETE carried kintone's revision fence (requestView.fenced);
	// absent for the other methods, which kintone cannot fence.
	Fenced *bool `json:"fenced,omitempty"`
	// write and answer stay in memory (TrafficLine.Write, TrafficLine.Answer): write holds
	// judged field values, which never go to the log file.
	write   *GateRequest
	answer  uint64
	sent    uint64
	created string
}

// TrafficLine is one logged request as Traffic returns it: the scenario record's traffic
// line (record.TrafficLine, its Process left for Record to name) and what stays in memory
// beside it.
type TrafficLine struct {
	record.TrafficLine
	// Fault and FaultAction name the fault that took the request, if one did.
	Fault       string
	FaultAction Action
	// Write is, for a write to the record(s) endpoint, what a gate would see of it, with
	// Values cut to Options.Judged: what the invariant checkers of flowtest run judge. It is
	// kept in memory only, never in the log file.
	Write *GateRequest
	// Created is the id kintone answered a single-record POST with (the record it added), ""
	// otherwise; in memory only, like Write.
	Created string
	// Answer orders the requests of every proxy of this process: the position at which a
	// proxy saw the request answered (the upstream's response arrived), or, for one that got
	// no answer, ended.
	Answer uint64
	// Sent is the position, in the same count as Answer, at which the proxy forwarded the
	// request to the upstream (0: never forwarded); with Answer it tells two requests that
	// overlapped at kintone.
	Sent uint64
}

// Record is the line for the scenario record, under the name of the process whose proxy
// logged it.
func (l TrafficLine) Record(process string) record.TrafficLine {
	r := l.TrafficLine
	r.Process = process
	return r
}

// answers numbers the answers seen by every proxy of the process (TrafficLine.Answer).
var answers atomic.Uint64

// maxTrafficLines bounds the lines Traffic keeps in memory (the log file keeps all).
const maxTrafficLines = 20000

// line is the entry as Traffic keeps it: the log file's fields in the record's shape (the
// log's own layout, with targeted and the fault, stays as it was) and the in-memory ones.
func (e *trafficEntry) line() TrafficLine {
	return TrafficLine{TrafficLine: record.TrafficLine{At: e.At, Method: e.Method, Path: e.Path, App: e.App,
		RecordID: e.RecordID, RecordKey: e.RecordKey, Fields: e.Fields, Blocked: e.Blocked, Heartbeat: e.Heartbeat,
		Fenced: e.Fenced, Status: e.Status, DurationMS: e.DurationMS, Error: e.Error},
		Fault: e.Fault, FaultAction: e.FaultAction, Write: e.write, Answer: e.answer, Sent: e.sent, Created: e.created}
}

// logTraffic queues the request's traffic line. Failed requests are logged before
// their connection is dropped, so a client that saw the failure finds the line after
// FlushLogs.
func (p *Proxy) logTraffic(e *trafficEntry, start time.Time) {
	e.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	if e.answer == 0 {
		e.answer = answers.Add(1) // no answer came: it ends now
	}
	p.mu.Lock()
	if len(p.traffic) < maxTrafficLines {
		p.traffic = append(p.traffic, e.line())
	}
	p.mu.Unlock()
	p.writeLog(p.trafficLog, e)
}

// Traffic returns the requests logged so far, in the order they ended (at most the first
// 20000; the traffic log file holds every one).
func (p *Proxy) Traffic() []TrafficLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]TrafficLine(nil), p.traffic...)
}

func (p *Proxy) writeLog(f *os.File, v any) {
	line, err := json.Marshal(v)
	if err != nil {
		return
	}
	line = append(line, '\n')
	p.logMu.RLock()
	defer p.logMu.RUnlock()
	if !p.logClosed {
		p.logCh <- logLine{f: f, b: line}
	}
}

// FlushLogs returns once every log line queued so far is written to its file.
func (p *Proxy) FlushLogs() {
	done := make(chan struct{})
	p.logMu.RLock()
	if p.logClosed {
		p.logMu.RUnlock()
		return // Close already wrote everything
	}
	p.logCh <- logLine{flushed: done}
	p.logMu.RUnlock()
	<-done
}

func (p *Proxy) logWriter() {
	defer close(p.logDone)
	bufs := map[*os.File]*bufio.Writer{}
	flushAll := func() {
		for _, b := range bufs {
			_ = b.Flush() // a failing log disk must not fail the proxied traffic
		}
	}
	for l := range p.logCh {
		if l.flushed != nil {
			flushAll()
			close(l.flushed)
			continue
		}
		b := bufs[l.f]
		if b == nil {
			b = bufio.NewWriter(l.f)
			bufs[l.f] = b
		}
		_, _ = b.Write(l.b)
		if len(p.logCh) == 0 {
			flushAll() // batch only while lines are queued; never sit on a line
		}
	}
	flushAll()
}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
