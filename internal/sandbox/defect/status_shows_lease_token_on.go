//go:build defect_status_shows_lease_token

package defect

// StatusShowsLeaseToken is planted: this binary was built with -tags defect_status_shows_lease_token (see defects.yaml).
const StatusShowsLeaseToken = true
