//go:build defect_release_refuses_archived_run

package defect

// ReleaseRefusesArchivedRun is planted: this binary was built with -tags defect_release_refuses_archived_run (see defects.yaml).
const ReleaseRefusesArchivedRun = true
