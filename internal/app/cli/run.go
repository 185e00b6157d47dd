package cli

// cmdRun is `flowtest run`: the run path (runpath.go) with the command line for run.json.
func cmdRun(inv invocation, f *runFlags, args []string) int {
	return runWith(f, inv, args, runExtras{command: inv.line})
}
