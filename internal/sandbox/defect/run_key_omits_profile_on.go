//go:build defect_run_key_omits_profile

package defect

// RunKeyOmitsProfile is planted: this binary was built with -tags defect_run_key_omits_profile (see defects.yaml).
const RunKeyOmitsProfile = true
