package redact

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// benchInput builds 8 MiB of log-like text (URLs, JSON lines, numbers, base64) with the 10
// secrets planted now and then in several encodings.
func benchInput(secrets map[string]string) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	names := slices.Sorted(maps.Keys(secrets))
	var b strings.Builder
	for i := 0; b.Len() < 8<<20; i++ {
		fmt.Fprintf(&b, "2026-11-29T10:%02d:%02d.%03dZ INFO GET /k/v1/records.json?app=%d&query=run_id%%20in%%20(%%22R%d%%22) status=200 took=%dms\n",
			i%60, i%60, i%1000, 4000+rng.IntN(400), rng.IntN(100000), rng.IntN(900))
		fmt.Fprintf(&b, `{"event":"heartbeat","node":"N%d","revision":"%d","lease_ms":30000,"payload":"%x"}`+"\n", i%43, rng.IntN(1000), rng.Uint64())
		if i%50 == 0 {
			v := secrets[names[rng.IntN(len(names))]]
			for _, e := range encodings(v)[:4] {
				fmt.Fprintf(&b, "leak %s here\n", e.text)
			}
		}
	}
	return []byte(b.String())
}

func benchSecrets() map[string]string {
	s := map[string]string{}
	for i := 0; i < 10; i++ {
		s[fmt.Sprintf("KSQL_SECRET_%d_TOKEN", i)] = fmt.Sprintf("Tk%02dx/9+aB7cD1eF3gH5iJ7kL9mN1oP3qR5sT", i)
	}
	return s
}

// BenchmarkRedact measures Bytes() on 8 MiB with 10 secrets (each in ~20 encodings) and the
// four app ids. Target: ≥ 50 MB/s.
func BenchmarkRedact(b *testing.B) {
	secrets := benchSecrets()
	r := New(secrets, map[string]string{"4257": "state", "4258": "audit", "4260": "request", "4264": "log"})
	in := benchInput(secrets)
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	for b.Loop() {
		out := r.Bytes(in)
		if len(out) == 0 {
			b.Fatal("empty output")
		}
	}
}

func TestBenchInputIsRedactedCompletely(t *testing.T) {
	secrets := benchSecrets()
	r := New(secrets, nil)
	out := r.Bytes(benchInput(secrets))
	leaks := scanForLeaks("bench", out, newMatcher(secretPatterns(secrets)), nil, nil)
	if len(leaks) > 0 {
		t.Fatalf("%d leaks after redaction, first %v", len(leaks), leaks[0])
	}
	if !strings.Contains(string(out), "[REDACTED:KSQL_SECRET_") {
		t.Fatal("no secret was planted")
	}
}

// manySecrets makes n secrets shaped like kintone API tokens and n reason bodies shaped like
// the harness's (scope prefix, words, a random tail).
func manySecrets(n int) (map[string]string, []string) {
	rng := rand.New(rand.NewPCG(3, 5))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	tok := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = alnum[rng.IntN(len(alnum))]
		}
		return string(b)
	}
	secrets := map[string]string{}
	reasons := make([]string, n)
	for i := 0; i < n; i++ {
		secrets[fmt.Sprintf("KSQL_E2E_TOKEN_STATE_S%d", i)] = tok(40)
		reasons[i] = fmt.Sprintf("KSQL_FLOW_TEST_261201_%04d operator stop: drill %d %s", i, i, tok(6))
	}
	return secrets, reasons
}

// BenchmarkRedactorAdd1000 registers 1,000 secrets and 1,000 reasons one by one, as a run's
// scenarios do: the cost must be that of the values added, not of what came before.
func BenchmarkRedactorAdd1000(b *testing.B) {
	secrets, reasons := manySecrets(1000)
	names := slices.Sorted(maps.Keys(secrets))
	for b.Loop() {
		r := New(nil, map[string]string{"4257": "state"})
		for i, name := range names {
			r.AddSecret(name, secrets[name])
			r.AddReason(reasons[i])
		}
	}
}

// BenchmarkRedactorBytes1MB redacts a 1 MB record with 1,000 secrets and 1,000 reasons
// registered (some of them planted in it).
func BenchmarkRedactorBytes1MB(b *testing.B) {
	secrets, reasons := manySecrets(1000)
	r := New(secrets, map[string]string{"4257": "state", "4258": "audit"})
	for _, body := range reasons {
		r.AddReason(body)
	}
	in := benchInput(secrets)[:1<<20]
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if out := r.Bytes(in); len(out) == 0 {
			b.Fatal("empty output")
		}
	}
}
