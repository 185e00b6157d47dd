package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles writes the runner's own CPU and block profiles when FLOWTEST_CPUPROFILE /
// FLOWTEST_BLOCKPROFILE name files (for `go tool pprof`): the runner's overhead is measured on a
// real run, not guessed. The returned function stops them; it is safe to call when neither is set.
func startProfiles() func() {
	var stops []func()
	if path := os.Getenv("FLOWTEST_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		} else {
			fmt.Fprintf(os.Stderr, "flowtest: FLOWTEST_CPUPROFILE %s: cannot start: %v\n", path, err)
		}
	}
	if path := os.Getenv("FLOWTEST_BLOCKPROFILE"); path != "" {
		runtime.SetBlockProfileRate(int(1e6)) // one sample per ms blocked
		runtime.SetMutexProfileFraction(10)
		stops = append(stops, func() {
			for _, name := range []string{"block", "mutex"} {
				f, err := os.Create(path + "." + name)
				if err != nil {
					fmt.Fprintf(os.Stderr, "flowtest: FLOWTEST_BLOCKPROFILE %s: %v\n", path, err)
					continue
				}
				pprof.Lookup(name).WriteTo(f, 0)
				f.Close()
			}
		})
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
