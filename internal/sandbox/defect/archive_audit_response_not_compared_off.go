//go:build !defect_archive_audit_response_not_compared

package defect

// ArchiveAuditResponseNotCompared is the correct behaviour (see defects.yaml for the planted bug).
const ArchiveAuditResponseNotCompared = false
