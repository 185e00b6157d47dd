//go:build !defect_release_refuses_archived_run

package defect

// ReleaseRefusesArchivedRun is the correct behaviour (see defects.yaml for the planted bug).
const ReleaseRefusesArchivedRun = false
