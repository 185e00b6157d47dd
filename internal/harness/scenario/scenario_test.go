package scenario

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
)

func TestCleanupRunsLIFOAndEveryActionEvenAfterFailures(t *testing.T) {
	st, err := New("s1", nil, t.TempDir(), nil)
	require.NoError(t, err)
	var order []string
	st.Defer("first", func(context.Context) error { order = append(order, "first"); return nil })
	st.Defer("fails", func(context.Context) error { order = append(order, "fails"); return errors.New("boom") })
	st.Defer("panics", func(context.Context) error { order = append(order, "panics"); panic("oops") })
	st.Defer("last", func(ctx context.Context) error {
		_, ok := ctx.Deadline()
		order = append(order, "last")
		if !ok {
			return errors.New("no deadline")
		}
		return nil
	})
	c := st.Cleanup(time.Second, false)
	assert.Equal(t, []string{"last", "panics", "fails", "first"}, order)
	assert.False(t, c.OK, "a failed cleanup is a failure")
	assert.Contains(t, c.Error, "fails: boom")
	assert.Contains(t, c.Error, "panics: panic: oops")
	assert.Contains(t, strings.Join(c.Actions, "\n"), "first: ok")
	_, err = os.Stat(st.WorkDir)
	assert.True(t, os.IsNotExist(err), "work dir removed")
}

func TestKeepWorkDirAndCleanRun(t *testing.T) {
	st, err := New("s2", nil, t.TempDir(), nil)
	require.NoError(t, err)
	c := st.Cleanup(time.Second, true)
	assert.True(t, c.OK)
	_, err = os.Stat(st.WorkDir)
	assert.NoError(t, err, "work dir kept")
}

func TestAssertionsAreRecordedWithExpectedAndSeen(t *testing.T) {
	st, err := New("s3", nil, t.TempDir(), nil)
	require.NoError(t, err)
	assert.NoError(t, st.On("state.NETWORK_RUN.status").Equal("run status", "SUCCESS", "SUCCESS"))
	err = st.On("exit.run-network", "output.run-network.json.outcome").Equal("exit code", 0, 1)
	require.Error(t, err)
	assert.Equal(t, "exit code: expected 0, saw 1", err.Error())
	var rec results.Scenario
	st.Evidence(&rec)
	require.Len(t, rec.Assertions, 2)
	assert.Equal(t, results.Assertion{What: "exit code", Expected: "0", Seen: "1", OK: false,
		Subjects: []string{"exit.run-network", "output.run-network.json.outcome"}}, rec.Assertions[1])
}

func TestFromPanicsOutsideAScenario(t *testing.T) {
	assert.Panics(t, func() { From(context.Background()) })
	st, err := New("s4", nil, t.TempDir(), nil)
	require.NoError(t, err)
	assert.Same(t, st, From(With(context.Background(), st)))
}

// Equal compares typed values: what only prints alike is not equal, and the record shows
// the Go values so the difference is visible.
func TestEqualComparesTypedValues(t *testing.T) {
	st, err := New("s4", nil, t.TempDir(), nil)
	require.NoError(t, err)
	err = st.On("harness.test").Equal("count", 3, "3")
	require.Error(t, err)
	assert.Equal(t, `count: expected 3, saw "3"`, err.Error())
	err = st.On("harness.test").Equal("argv", []string{"a b"}, []string{"a", "b"})
	require.Error(t, err)
	assert.Equal(t, `argv: expected []string{"a b"}, saw []string{"a", "b"}`, err.Error())
	assert.Error(t, st.On("harness.test").Equal("bytes", 3, int64(3)), "int and int64 are different types")
	assert.NoError(t, st.On("harness.test").Equal("argv", []string{"a", "b"}, []string{"a", "b"}))
	assert.NoError(t, st.On("harness.test").Equal("count", int64(3), int64(3)))
	var rec results.Scenario
	st.Evidence(&rec)
	require.Len(t, rec.Assertions, 5)
	assert.Equal(t, results.Assertion{What: "count", Expected: "3", Seen: `"3"`, OK: false, Subjects: []string{"harness.test"}}, rec.Assertions[0])
}
