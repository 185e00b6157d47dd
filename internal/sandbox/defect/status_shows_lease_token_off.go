//go:build !defect_status_shows_lease_token

package defect

// StatusShowsLeaseToken is the correct behaviour (see defects.yaml for the planted bug).
const StatusShowsLeaseToken = false
