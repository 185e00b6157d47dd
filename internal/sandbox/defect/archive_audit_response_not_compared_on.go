//go:build defect_archive_audit_response_not_compared

package defect

// ArchiveAuditResponseNotCompared is planted: this binary was built with -tags defect_archive_audit_response_not_compared (see defects.yaml).
const ArchiveAuditResponseNotCompared = true
