//go:build defect_capability_check_ignores_inputs

package defect

// CapabilityCheckIgnoresInputs is planted: this binary was built with -tags defect_capability_check_ignores_inputs (see defects.yaml).
const CapabilityCheckIgnoresInputs = true
