//go:build !defect_cloud_run_owner_unchecked

package defect

// CloudRunOwnerUnchecked is the correct behaviour (see defects.yaml for the planted bug).
const CloudRunOwnerUnchecked = false
