//go:build !defect_release_refuses_terminal_run

package defect

// ReleaseRefusesTerminalRun is the correct behaviour (see defects.yaml for the planted bug).
const ReleaseRefusesTerminalRun = false
