//go:build !defect_close_archives_unknown_run

package defect

// CloseArchivesUnknownRun is the correct behaviour (see defects.yaml for the planted bug).
const CloseArchivesUnknownRun = false
