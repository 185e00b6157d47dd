//go:build defect_archive_audit_failure_recorded

package defect

// ArchiveAuditFailureRecorded is planted: this binary was built with -tags defect_archive_audit_failure_recorded (see defects.yaml).
const ArchiveAuditFailureRecorded = true
