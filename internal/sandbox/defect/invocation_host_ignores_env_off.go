//go:build !defect_invocation_host_ignores_env

package defect

// InvocationHostIgnoresEnv is the correct behaviour (see defects.yaml for the planted bug).
const InvocationHostIgnoresEnv = false
