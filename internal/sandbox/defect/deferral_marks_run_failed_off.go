//go:build !defect_deferral_marks_run_failed

package defect

// DeferralMarksRunFailed is the correct behaviour (see defects.yaml for the planted bug).
const DeferralMarksRunFailed = false
