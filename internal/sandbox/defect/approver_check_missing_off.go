//go:build !defect_approver_check_missing

package defect

// ApproverCheckMissing is the correct behaviour (see defects.yaml for the planted bug).
const ApproverCheckMissing = false
