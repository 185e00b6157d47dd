package cli

import (
	"fmt"
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
	n, _ := s.concurrencyFrom()
	return n
}

// concurrencyFrom is the run's concurrency and where it came from, in the words of check's
// line: the one resolution run and check share, so check judges what the run will use.
func (s *session) concurrencyFrom() (int, string) {
	if v, set := s.cfg.Lookup(config.VarConcurrency); set {
		return s.cfg.Concurrency, "from " + originWords(v.Origin)
	}
	if s.in.Target != safety.TargetSandbox {
		return s.cfg.Concurrency, "live runs are serial"
	}
	return defaultConcurrency(), fmt.Sprintf("the sandbox default: 3 per core, 2 to 8, on %d cores", runtime.NumCPU())
}

// originWords names where a configuration value came from.
func originWords(o safety.Origin) string {
	switch o {
	case safety.OriginFlag:
		return "--concurrency"
	case safety.OriginOSEnv:
		return "FLOWTEST_CONCURRENCY in the environment"
	case safety.OriginDotEnv:
		return "FLOWTEST_CONCURRENCY in .env"
	}
	return string(o)
}
