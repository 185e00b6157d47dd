//go:build !defect_scheduled_period_in_utc

package defect

// ScheduledPeriodInUtc is the correct behaviour (see defects.yaml for the planted bug).
const ScheduledPeriodInUtc = false
