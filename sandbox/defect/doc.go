// Package defect holds the build-time switches of the planted defects (issue 10): small,
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
// catch. `flowtest defects` (cmd/flowtest/defects.go, `make defects`) builds
// `go build -tags defect_<name> ./cmd/flowsandbox` per defect, runs the declared scenarios
// against it and prints whether each was caught. This package's test keeps the catalogue,
// the file pairs and the hooks in step.
package defect
