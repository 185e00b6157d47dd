package csv

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/shirou/gopsutil/v3/process"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
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
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	s := csvMemoryKey.Of(sc.St)
	root := csvIOKey.Of(sc.St).root(fx.Scope().ID())
	if root == "" {
		return fmt.Errorf("no CSV IO root was made for the scope (missing the CSV input step)")
	}
	start := time.Now()
	c, err := kit.RunNetwork(ctx, "")
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
	err = c.Finish(ctx)
	s.wall = time.Since(start)
	close(done)
	<-sampled
	return err
}

func (csvMemoryDomain) measured(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	s := csvMemoryKey.Of(sc.St)
	_, _, size := csvIOKey.Of(sc.St).inputFile()
	line := fmt.Sprintf("FlowNet wall %.1f s; kSQL-Flow child seen for %.1f s, peak RSS %.1f MiB in %d samples; input %d rows, %d bytes",
		s.wall.Seconds(), s.child.Seconds(), float64(s.peakRSS)/(1<<20), s.samples, len(csvIOKey.Of(sc.St).written()), size)
	sc.St.Note("CSV import measurement", line)
	if sc.St.Log != nil {
		fmt.Fprintf(sc.St.Log, "  measured: %s\n", line)
	}
	return sc.St.On("process.ksql-flow.memory").Assert("memory samples of the kSQL-Flow child", ">= 1 sample with a resident size", fmt.Sprintf("%d samples, peak %d bytes", s.samples, s.peakRSS), s.samples >= 1 && s.peakRSS > 0)
}
