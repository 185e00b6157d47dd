//go:build !defect_capability_check_ignores_inputs

package defect

// CapabilityCheckIgnoresInputs is the correct behaviour (see defects.yaml for the planted bug).
const CapabilityCheckIgnoresInputs = false
