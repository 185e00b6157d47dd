//go:build defect_record_job_unlock_accepts_foreign_job_key

package defect

// RecordJobUnlockAcceptsForeignJobKey is planted: this binary was built with -tags defect_record_job_unlock_accepts_foreign_job_key (see defects.yaml).
const RecordJobUnlockAcceptsForeignJobKey = true
