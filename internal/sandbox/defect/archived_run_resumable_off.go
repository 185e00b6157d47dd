//go:build !defect_archived_run_resumable

package defect

// ArchivedRunResumable is the correct behaviour (see defects.yaml for the planted bug).
const ArchivedRunResumable = false
