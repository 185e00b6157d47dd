package proxy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/results"
)

// The m7-03 hold ends on the lease's clock: the first 2xx heartbeat at least `after` past the
// first 2xx lease write, by time (the traffic log is in completion order), never by position.
func TestHeartbeatAfterFirstLeaseWrite(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	lease := func(s float64, status int) faultproxy.TrafficLine {
		return faultproxy.TrafficLine{TrafficLine: results.TrafficLine{At: at(s), Status: status, Fields: []string{"lease_expires_at", "status"}}}
	}
	beat := func(s float64, status int) faultproxy.TrafficLine {
		return faultproxy.TrafficLine{TrafficLine: results.TrafficLine{At: at(s), Status: status, Heartbeat: true, Fields: []string{"heartbeat_at", "lease_expires_at"}}}
	}
	cases := []struct {
		name        string
		lines       []faultproxy.TrafficLine
		first, beat time.Time
		heartbeats  int
	}{
		{"nothing yet", nil, time.Time{}, time.Time{}, 0},
		{"a heartbeat too early", []faultproxy.TrafficLine{lease(0, 200), beat(3, 200)}, at(0), time.Time{}, 1},
		{"the first heartbeat late enough", []faultproxy.TrafficLine{lease(0, 200), beat(3, 200), beat(10, 200), beat(13, 200)}, at(0), at(10), 3},
		{"a failed lease write is not the start", []faultproxy.TrafficLine{lease(0, 503), lease(1, 200), beat(10.5, 200)}, at(1), time.Time{}, 1},
		{"a failed heartbeat does not count", []faultproxy.TrafficLine{lease(0, 200), beat(10, 409), beat(11, 200)}, at(0), at(11), 1},
		{"completion order is not time order", []faultproxy.TrafficLine{beat(12, 200), lease(2, 200), beat(11, 200)}, at(2), at(12), 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first, b, n := heartbeatAfterFirstLeaseWrite(tc.lines, 10*time.Second)
			assert.Equal(t, tc.first, first, "first lease write")
			assert.Equal(t, tc.beat, b, "heartbeat past the interval")
			assert.Equal(t, tc.heartbeats, n, "heartbeats")
		})
	}
}
