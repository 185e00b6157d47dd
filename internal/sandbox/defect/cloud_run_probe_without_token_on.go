//go:build defect_cloud_run_probe_without_token

package defect

// CloudRunProbeWithoutToken is planted: this binary was built with -tags defect_cloud_run_probe_without_token (see defects.yaml).
const CloudRunProbeWithoutToken = true
