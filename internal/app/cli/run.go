package cli

import (
	"flag"
)

// cmdRun is `flowtest run`: the run path (runpath.go) with the command line for run.json.
func cmdRun(inv invocation, f *runFlags, fs *flag.FlagSet, args []string) int {
	return runWith("run", f, fs, args, inv, runExtras{command: append([]string{"flowtest", "run"}, args...)})
}
