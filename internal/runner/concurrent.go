package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/ksqlflow/flowtest/internal/results"
)

// LockedWriter serialises the writes of concurrent runs (scenarios, the defects' runs) to one
// console, so that every line is whole.
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// scenarioLog is a scenario's log when several scenarios run at once: every line goes to a
// log file of its own (beside the scenarios' work dirs, so that it survives their removal
// with --keep-workdirs), and only the progress of slow waits ("wait: still waiting …",
// "wait: … reached after …") reaches the console, prefixed with the scenario id.
type scenarioLog struct {
	id      string
	console io.Writer
	mu      sync.Mutex
	file    *os.File
	partial []byte
}

func (l *scenarioLog) open(dir, name string) {
	if dir == "" {
		return
	}
	f, err := os.CreateTemp(dir, name+"-*.log")
	if err != nil {
		fmt.Fprintf(l.console, "  [%s] scenario log not written: %v\n", l.id, err)
		return
	}
	l.file = f
}

func (l *scenarioLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.line(l.partial)
		l.partial = nil
	}
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
}

func (l *scenarioLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Write(p)
	}
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

func (l *scenarioLog) line(b []byte) {
	text := strings.TrimSpace(string(b))
	if strings.HasPrefix(text, "wait: ") {
		fmt.Fprintf(l.console, "  [%s] %s\n", l.id, text)
	}
}

// written returns the records written so far, in run order.
func written(recs []*results.Scenario) []*results.Scenario {
	var out []*results.Scenario
	for _, r := range recs {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}
