package cli

import (
	"runtime"

	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// defaultConcurrency is the sandbox's concurrency when neither --concurrency nor
// FLOWTEST_CONCURRENCY says: scenarios mostly wait (leases, pollers, long reads), so three
// per core, at most 8 (6 on a 2-core machine). Live runs are serial (one tenant).
func defaultConcurrency() int {
	n := 3 * runtime.NumCPU()
	if n > 8 {
		n = 8
	}
	if n < 2 {
		n = 2
	}
	return n
}

// concurrency is the run's: as configured, else the sandbox default, else 1.
func (s *session) concurrency() int {
	if _, set := s.cfg.Lookup(config.VarConcurrency); set || s.in.Target != safety.TargetSandbox {
		return s.cfg.Concurrency
	}
	return defaultConcurrency()
}
