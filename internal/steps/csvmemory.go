package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/shirou/gopsutil/v3/process"
)

// csvMemoryDomain: csv1-04's measured import: FlowNet's wall time and the kSQL-Flow child's
// peak resident memory, sampled with gopsutil — evidence, not a timed assertion.
type csvMemoryDomain struct{}

func (d csvMemoryDomain) register(reg stepdef.Registry) {
	reg.Step(`^FlowNet runs the network for the scope's business key while the memory of its kSQL-Flow child is sampled$`, d.runsMeasured)
	reg.Step(`^the wall time and the peak memory of the kSQL-Flow child were measured$`, d.measured)
}

// csvMemoryState is the last measured run: FlowNet's wall time, the kSQL-Flow child's
// lifetime as seen, its peak RSS and how many samples were taken.
type csvMemoryState struct {
	wall, child time.Duration
	peakRSS     uint64
	samples     int
}

var csvMemoryKey = scenario.NewKey[csvMemoryState]("csv-memory")

// runsMeasured runs the network to its end while a sampler follows the kSQL-Flow child (found
// by its --import-csv argument under the scope's IO root) and reads its resident memory every
// 10 ms with gopsutil: evidence, not a timed assertion (speed targets belong to benchmarks).
func (csvMemoryDomain) runsMeasured(ctx context.Context) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvMemoryKey.Of(sc.st)
	root := csvIOKey.Of(sc.st).root(fx.scope().ID())
	if root == "" {
		return fmt.Errorf("no CSV IO root was made for the scope (missing the CSV input step)")
	}
	start := time.Now()
	c, err := runNetwork(ctx, "")
	if err != nil {
		return err
	}
	done := make(chan struct{})
	sampled := make(chan struct{})
	match := proc.AllOf(proc.ArgvHasSeq("--import-csv"), proc.ArgvContains(filepath.Base(root)))
	s.peakRSS, s.samples, s.child = 0, 0, 0
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var child *process.Process
		var first, last time.Time
		for {
			select {
			case <-done:
				if !first.IsZero() {
					s.child = last.Sub(first)
				}
				return
			case <-tick.C:
			}
			if child == nil {
				pids, err := proc.FindByArgv(ctx, match)
				if err != nil || len(pids) == 0 {
					continue
				}
				child = &process.Process{Pid: pids[0]}
			}
			mi, err := child.MemoryInfoWithContext(ctx)
			if err != nil {
				continue // gone (or not readable): the last sample stands
			}
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			last = now
			s.samples++
			s.peakRSS = max(s.peakRSS, mi.RSS)
		}
	}()
	err = c.finish(ctx)
	s.wall = time.Since(start)
	close(done)
	<-sampled
	return err
}

func (csvMemoryDomain) measured(ctx context.Context) error {
	sc := sceneOf(ctx)
	s := csvMemoryKey.Of(sc.st)
	_, _, size := csvIOKey.Of(sc.st).inputFile()
	line := fmt.Sprintf("FlowNet wall %.1f s; kSQL-Flow child seen for %.1f s, peak RSS %.1f MiB in %d samples; input %d rows, %d bytes",
		s.wall.Seconds(), s.child.Seconds(), float64(s.peakRSS)/(1<<20), s.samples, len(csvIOKey.Of(sc.st).written()), size)
	sc.st.Note("CSV import measurement", line)
	if sc.st.Log != nil {
		fmt.Fprintf(sc.st.Log, "  measured: %s\n", line)
	}
	return sc.st.Assert("memory samples of the kSQL-Flow child", ">= 1 sample with a resident size", fmt.Sprintf("%d samples, peak %d bytes", s.samples, s.peakRSS), s.samples >= 1 && s.peakRSS > 0)
}
