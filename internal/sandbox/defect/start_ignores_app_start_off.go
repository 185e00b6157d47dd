//go:build !defect_start_ignores_app_start

package defect

// StartIgnoresAppStart is the correct behaviour (see defects.yaml for the planted bug).
const StartIgnoresAppStart = false
