//go:build !defect_archive_audit_failure_recorded

package defect

// ArchiveAuditFailureRecorded is the correct behaviour (see defects.yaml for the planted bug).
const ArchiveAuditFailureRecorded = false
