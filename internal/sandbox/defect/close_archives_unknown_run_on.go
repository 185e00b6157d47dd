//go:build defect_close_archives_unknown_run

package defect

// CloseArchivesUnknownRun is planted: this binary was built with -tags defect_close_archives_unknown_run (see defects.yaml).
const CloseArchivesUnknownRun = true
