// Package layering holds the module's dependency order and its checker, tested against
// `go list`: the order as levels in the manner of the Go tree's go/build deps_test.go ("<"
// places packages above what they may import, "!<" forbids a dependency outright, even an
// indirect one), a package name used once in the module, and docs/layout.md's package map,
// checked to list every package with its size and why it exists. docs/layout.md says why the
// levels are what they are; the rules keep them so. A new package needs a place in both.
package layering
