// Package layering holds only tests about the whole module: the import rules as a table
// (which of our packages each package may import), checked against `go list`, in the spirit
// of the Go tree's go/build deps_test.go; and docs/layout.md's package map, checked to list
// every package with its size and why it exists. docs/layout.md says why the arrows go the
// way they do; the table is what keeps them so. A new package needs a row in both.
package layering
