//go:build !defect_record_job_unlock_accepts_foreign_job_key

package defect

// RecordJobUnlockAcceptsForeignJobKey is the correct behaviour (see defects.yaml for the planted bug).
const RecordJobUnlockAcceptsForeignJobKey = false
