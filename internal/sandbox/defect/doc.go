// Package defect holds the build-time switches of the planted defects: small,
// named, realistic bugs in the sandbox's FlowNet, kSQL-Flow and kintone emulator that prove
// each acceptance scenario can fail. A scenario that cannot fail is not evidence.
//
// Each defect is one pair of files: `<name>_on.go` (`//go:build defect_<name>`, constant
// true) and `<name>_off.go` (`//go:build !defect_<name>`, constant false). The constant is
// read by a one- or few-line `if defect.X { … }` hook at the spot where a real
// implementation would have the bug. Because the switch is a constant, the shipped
// flowsandbox (built without tags) carries no switch at all: the compiler drops the dead
// branch, and no environment variable or flag can turn a defect on.
//
// The catalogue, defects.yaml in this directory, is the one place that says what each
// defect breaks, which scenarios must catch it and which failing assertion counts as the
// catch. `flowtest defects` (internal/app/cli/defects.go, `make defects`) builds
// `go build -tags defect_<name> ./cmd/flowsandbox` per defect, runs the declared scenarios
// against it and prints whether each was caught. This package's test keeps the catalogue,
// the file pairs and the hooks in step.
//
// A defect is caught only when the SUT ran to its normal end and the declared assertion
// failed: a defect that crashes the sandbox proves that crashes are noticed, not that the
// scenario's assertion can fail. So a planted bug must be one the product would live with
// (the run ends; its records or output are wrong), and `flowtest defects` refuses a catch
// whose scenario record shows a crash. The rule, over every process of the
// record: a Go runtime failure on stderr ("panic: ", "fatal error: ", a "goroutine <n> ["
// dump header); an end by a signal the harness never sends (anything but SIGINT, SIGTERM,
// SIGKILL; "still running when recorded" is no end); a kintone error code (CB_XXnn,
// GAIA_XXnn) on stderr; and, for FlowNet, an "Error [<CODE>]" line or --json
// invocation_result_code whose code means it failed instead of deciding an outcome
// (SCHEDULER_FAILED, command fallbacks, INTERNAL_ERROR, repository invariant codes; the
// full list is in defects.yaml's header and crashOf). Such a run is ESCAPED, "crashed: …".
package defect
