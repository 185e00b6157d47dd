//go:build defect_archive_audit_result_code_missing

package defect

// ArchiveAuditResultCodeMissing is planted: this binary was built with -tags defect_archive_audit_result_code_missing (see defects.yaml).
const ArchiveAuditResultCodeMissing = true
