//go:build !defect_close_without_network_lock

package defect

// CloseWithoutNetworkLock is the correct behaviour (see defects.yaml for the planted bug).
const CloseWithoutNetworkLock = false
