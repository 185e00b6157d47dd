// Package layering holds only a test: the module's import rules as a table (which of our
// packages each package may import), checked against `go list`, in the spirit of the Go tree's
// go/build deps_test.go. docs/layout.md says why the arrows go the way they do; this table is
// what keeps them so. A new package needs a row.
package layering
