//go:build defect_release_refuses_terminal_run

package defect

// ReleaseRefusesTerminalRun is planted: this binary was built with -tags defect_release_refuses_terminal_run (see defects.yaml).
const ReleaseRefusesTerminalRun = true
