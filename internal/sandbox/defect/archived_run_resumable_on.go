//go:build defect_archived_run_resumable

package defect

// ArchivedRunResumable is planted: this binary was built with -tags defect_archived_run_resumable (see defects.yaml).
const ArchivedRunResumable = true
