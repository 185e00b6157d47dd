package scope

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 29, 22, 33, 49, 0, time.UTC)

func newScope(t *testing.T, label string) *Scope {
	t.Helper()
	s, err := New(label, t0, bytes.NewReader([]byte{0xab, 0xcd}))
	require.NoError(t, err)
	return s
}

func TestNewFormat(t *testing.T) {
	s := newScope(t, "m5")
	assert.Equal(t, "KSQL_FLOW_TEST_261129223349_abcd_m5", s.ID())
	// SHA-256("KSQL_FLOW_TEST_261129223349_abcd_m5")[:8], computed with sha256sum.
	assert.Equal(t, "1af93dcf", s.Hash8())
	assert.Equal(t, []string{s.ID()}, s.Identifiers())
}

func TestNewUsesUTC(t *testing.T) {
	jst := time.FixedZone("JST", 9*3600)
	s, err := New("m5", t0.In(jst), bytes.NewReader([]byte{0, 1}))
	require.NoError(t, err)
	assert.Equal(t, "KSQL_FLOW_TEST_261129223349_0001_m5", s.ID())
}

func TestNewLabelSanitisedAndTruncated(t *testing.T) {
	cases := map[string]string{
		"p2-16-02-cancel-claim-race": "KSQL_FLOW_TEST_261129223349_abcd_p2_16_02_cancel",
		"csv1-03":                    "KSQL_FLOW_TEST_261129223349_abcd_csv1_03",
		"  m6 / 03 -- x ":            "KSQL_FLOW_TEST_261129223349_abcd_m6_03_x",
		"受入-m5":                      "KSQL_FLOW_TEST_261129223349_abcd_m5",
		// truncation must not leave a trailing "_"
		"abcdefghijklmn-opq": "KSQL_FLOW_TEST_261129223349_abcd_abcdefghijklmn",
	}
	for label, want := range cases {
		s := newScope(t, label)
		assert.Equal(t, want, s.ID(), label)
		assert.LessOrEqual(t, len(s.ID()), MaxScopeLen)
		assert.Regexp(t, `^KSQL_FLOW_TEST_\d{12}_[0-9a-f]{4}_[A-Za-z0-9_]+$`, s.ID())
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New("受入", t0, bytes.NewReader([]byte{1, 2}))
	assert.ErrorContains(t, err, "no letters or digits")
	_, err = New("m5", t0, bytes.NewReader([]byte{1}))
	assert.ErrorContains(t, err, "random part")
	// nil reader: crypto/rand
	s, err := New("m5", t0, nil)
	require.NoError(t, err)
	assert.Regexp(t, `^KSQL_FLOW_TEST_261129223349_[0-9a-f]{4}_m5$`, s.ID())
}

func TestJobID(t *testing.T) {
	s := newScope(t, "p2-16-02-cancel-claim-race")
	id, err := s.JobID("m5_shared_read")
	require.NoError(t, err)
	assert.Equal(t, "KSQL_FLOW_TEST_b4df4f70_m5_shared_read", id)
	assert.NoError(t, s.CheckJobKey("e2e", id))

	// 24 units of prefix + 36 = 60 is the limit.
	ok := strings.Repeat("j", 36)
	id, err = s.JobID(ok)
	require.NoError(t, err)
	assert.Len(t, id, MaxJobIDLen)
	_, err = s.JobID(ok + "x")
	assert.ErrorContains(t, err, "over the 60 limit")
	assert.ErrorContains(t, err, "at most 36")

	// Japanese names count one unit per character.
	jp := strings.Repeat("集", 36)
	id, err = s.JobID(jp)
	require.NoError(t, err)
	assert.Equal(t, 60, len(utf16.Encode([]rune(id))))
	_, err = s.JobID(jp + "計")
	assert.Error(t, err)
	// A character outside the BMP is two units.
	_, err = s.JobID(strings.Repeat("j", 35) + "😀")
	assert.Error(t, err)

	for _, bad := range []string{"", "a:b", " a", "a\tb", "a\x00"} {
		_, err := s.JobID(bad)
		assert.Error(t, err, "%q", bad)
	}
	_, err = s.JobID("")
	assert.True(t, errors.Is(err, errEmptyName))
}

func TestCheckJobKeyCountsUTF16(t *testing.T) {
	s := newScope(t, "m5")
	jp60, err := s.JobID(strings.Repeat("集", 36)) // 24 + 36 = 60 units, 132 bytes
	require.NoError(t, err)
	assert.NoError(t, s.CheckJobKey("e2e", jp60), "3+1+60 = 64 units fits")
	assert.ErrorContains(t, s.CheckJobKey("e2ex", jp60), "65 UTF-16 units")
	assert.NoError(t, s.CheckJobKey("プロ", jp60[:len(jp60)-len("集")]), "2+1+59 = 62 units")
	assert.Error(t, s.CheckJobKey("プロファ", jp60), "4+1+60 = 65 units")
	emoji := strings.Repeat("😀", 31) // 62 units, 31 code points
	assert.NoError(t, s.CheckJobKey("e", emoji), "1+1+62 = 64")
	assert.Error(t, s.CheckJobKey("ee", emoji), "2+1+62 = 65, though only 34 code points")
}

func TestNetworkID(t *testing.T) {
	short := newScope(t, "m5")
	assert.Equal(t, "KSQL_FLOW_TEST_261129223349_abcd_m5_m7_rerun_nonidem2", short.NetworkID("m7_rerun_nonidem2"))

	long := newScope(t, "p2-16-02-cancel-claim-race") // 48 chars
	id := long.NetworkID("m7_rerun_nonidem2")
	// 48 + "_" + 17 = 66 > 64: head "m7_rerun" + "_" + SHA-256("m7_rerun_nonidem2")[:6].
	assert.Equal(t, "KSQL_FLOW_TEST_261129223349_abcd_p2_16_02_cancel_m7_rerun_9825f4", id)
	assert.Len(t, id, MaxNetworkIDLen)
	assert.True(t, strings.HasPrefix(id, long.ID()+"_"))
	assert.Equal(t, id, long.NetworkID("m7_rerun_nonidem2"), "deterministic")
	assert.NotEqual(t, id, long.NetworkID("m7_rerun_nonidem"), "distinct fixtures stay distinct")
	assert.Equal(t, long.ID()+"_p211_scheduled", long.NetworkID("p211_scheduled"), "fits exactly: 48+1+14")

	// Japanese fixture ids are cut on character boundaries.
	jp := long.NetworkID(strings.Repeat("網", 40))
	assert.LessOrEqual(t, len(utf16.Encode([]rune(jp))), MaxNetworkIDLen)
	assert.True(t, strings.HasPrefix(jp, long.ID()+"_網"))
}

func TestNodeIDAndOthers(t *testing.T) {
	s := newScope(t, "m5")
	assert.Equal(t, s.ID()+"_n1_extract", s.NodeID("n1_extract"))
	long := s.NodeID(strings.Repeat("n", 200))
	assert.Len(t, long, MaxNodeIDLen)
	assert.True(t, strings.HasPrefix(long, s.ID()+"_nnn"))

	assert.Equal(t, s.ID(), s.BusinessKey())
	assert.Equal(t, s.ID()+":rerun-1", s.Reason("rerun-1"))
	assert.Equal(t, "KSQL_FLOW_TEST_1af93dcf_service", s.Principal("service"))
	assert.Equal(t, "KSQL_FLOW_TEST_1af93dcf_direct_requester", s.Principal("direct-requester"))
	assert.NotEqual(t, s.Principal("service"), s.Principal("requester"))
	assert.Equal(t, "KSQL_FLOW_TEST_1af93dcf_principal", s.Principal("受入"))
	assert.Equal(t, "KSQL_FLOW_TEST_1af93dcf_poller", s.Host())
	assert.Equal(t, s.ID()+"_claim_before", s.BarrierID("claim_before"))
	assert.Equal(t, s.ID()+"_claim_after", s.BarrierID("claim after"))
}

func TestIdentifiersRecordsEverythingOnceInOrder(t *testing.T) {
	s := newScope(t, "m5")
	job, err := s.JobID("m5_x")
	require.NoError(t, err)
	net := s.NetworkID("m5_success")
	_ = s.NetworkID("m5_success")
	node := s.NodeID("n1")
	reason := s.Reason("r")
	host := s.Host()
	_, _ = s.JobID("bad:name") // refused ids are not recorded
	assert.Equal(t, []string{s.ID(), job, net, node, reason, host}, s.Identifiers())
	for _, id := range s.Identifiers() {
		assert.True(t, strings.HasPrefix(id, Prefix), id)
	}
	// The returned slice is a copy.
	ids := s.Identifiers()
	ids[0] = "x"
	assert.Equal(t, s.ID(), s.Identifiers()[0])
}

func TestConcurrentUse(t *testing.T) {
	s := newScope(t, "m5")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				s.NodeID(string(rune('a'+i)) + strings.Repeat("x", j))
				_ = s.Identifiers()
			}
		}()
	}
	wg.Wait()
	assert.Len(t, s.Identifiers(), 1+8*50)
}

func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		if _, err := New("p2-16-02-cancel-claim-race", t0, nil); err != nil {
			b.Fatal(err)
		}
	}
}
