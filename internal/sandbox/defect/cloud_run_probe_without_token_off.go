//go:build !defect_cloud_run_probe_without_token

package defect

// CloudRunProbeWithoutToken is the correct behaviour (see defects.yaml for the planted bug).
const CloudRunProbeWithoutToken = false
