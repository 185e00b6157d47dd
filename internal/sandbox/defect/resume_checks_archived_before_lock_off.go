//go:build !defect_resume_checks_archived_before_lock

package defect

// ResumeChecksArchivedBeforeLock is the correct behaviour (see defects.yaml for the planted bug).
const ResumeChecksArchivedBeforeLock = false
