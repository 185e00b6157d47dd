// Package wrapmode names the kSQL-Flow wrapper, `flowtest ksql-flow-wrapper`
// (internal/app/ksqlwrap), and its modes, shared by the CSV steps that start it and the
// command that runs it so they cannot disagree; a leaf, so the command does not link the
// step library.
//
//	wrapmode.go  the command's name and its modes
package wrapmode

const (
	Command            = "ksql-flow-wrapper"
	LegacyCapabilities = "legacy-capabilities" // capabilities --json says importCsv false
	ExportSJIS         = "export-sjis"         // export runs get --export-encoding sjis
)
