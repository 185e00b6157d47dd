package flownet

import (
	"fmt"
	"testing"
)

// BenchmarkRunNetworkSerialSuccess measures one NEW run-network of the 3-node success
// network (in-process FlowNet, emulator without latency, kSQL-Flow as child processes).
func BenchmarkRunNetworkSerialSuccess(b *testing.B) {
	s := newSandbox(b, nil)
	net := s.network("network-success.yaml")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := s.flownet("run-network", net, "--business-key", fmt.Sprintf("bench-%d", i))
		if r.code != 0 {
			b.Fatalf("run-network exit %d: %s", r.code, r.stderr)
		}
	}
}

// BenchmarkStatusDetail measures `status --run-id --json` of a finished 3-node Run.
func BenchmarkStatusDetail(b *testing.B) {
	s := newSandbox(b, nil)
	r := s.flownet("run-network", s.network("network-success.yaml"), "--business-key", "bench")
	if r.code != 0 {
		b.Fatalf("run-network exit %d: %s", r.code, r.stderr)
	}
	runID := runIDOf(b, r.stdout)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if st := s.flownet("status", "m5_success", "--profile", testProfile, "--run-id", runID, "--json"); st.code != 0 {
			b.Fatalf("status exit %d: %s", st.code, st.stderr)
		}
	}
}

func BenchmarkR1Key(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := R1Key("prod", "network-a", "order-001"); err != nil {
			b.Fatal(err)
		}
	}
}
