//go:build !defect_kintone_ignores_stale_revision

package defect

// KintoneIgnoresStaleRevision is the correct behaviour (see defects.yaml for the planted bug).
const KintoneIgnoresStaleRevision = false
