package proc

import (
	"context"
	"testing"
)

// BenchmarkFindByArgv measures one scan of the process table with command lines, the
// cost of every find-by-argv and tree kill.
func BenchmarkFindByArgv(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := FindByArgv(context.Background(), ArgvHasSeq("--attempt-id", "none")); err != nil {
			b.Fatal(err)
		}
	}
}
