//go:build !defect_input_audit_leaks_cell

package defect

// InputAuditLeaksCell is the correct behaviour (see defects.yaml for the planted bug).
const InputAuditLeaksCell = false
