//go:build defect_resume_checks_archived_before_lock

package defect

// ResumeChecksArchivedBeforeLock is planted: this binary was built with -tags defect_resume_checks_archived_before_lock (see defects.yaml).
const ResumeChecksArchivedBeforeLock = true
