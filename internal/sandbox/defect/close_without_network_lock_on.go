//go:build defect_close_without_network_lock

package defect

// CloseWithoutNetworkLock is planted: this binary was built with -tags defect_close_without_network_lock (see defects.yaml).
const CloseWithoutNetworkLock = true
