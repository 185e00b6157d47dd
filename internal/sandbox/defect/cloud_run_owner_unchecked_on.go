//go:build defect_cloud_run_owner_unchecked

package defect

// CloudRunOwnerUnchecked is planted: this binary was built with -tags defect_cloud_run_owner_unchecked (see defects.yaml).
const CloudRunOwnerUnchecked = true
