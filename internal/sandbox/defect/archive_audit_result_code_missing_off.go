//go:build !defect_archive_audit_result_code_missing

package defect

// ArchiveAuditResultCodeMissing is the correct behaviour (see defects.yaml for the planted bug).
const ArchiveAuditResultCodeMissing = false
