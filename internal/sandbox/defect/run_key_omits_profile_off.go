//go:build !defect_run_key_omits_profile

package defect

// RunKeyOmitsProfile is the correct behaviour (see defects.yaml for the planted bug).
const RunKeyOmitsProfile = false
