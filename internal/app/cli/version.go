package cli

// The runner version, shared by the table (`flowtest version`) and the run records.

// Version is the runner version written into run.json (set with
// -ldflags "-X github.com/ksqlflow/flowtest/internal/app/cli.Version=…" at release).
var Version = "0.1.0-dev"
