package runner

import (
	"os"
	"time"

	"github.com/shirou/gopsutil/v3/process"
)

// processCPU is the CPU time (user + system) the runner's own process used so far, not its
// children's: the figure the runner-overhead budget is about. Zero when the platform does not
// tell.
func processCPU() time.Duration {
	p, err := process.NewProcess(int32(os.Getpid()))
	if err != nil {
		return 0
	}
	t, err := p.Times()
	if err != nil {
		return 0
	}
	return time.Duration((t.User + t.System) * float64(time.Second))
}
