package csv

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// csvLeakDomain: the no-leak scan: no field of the run's state and audit records holds a
// path of the IO root or a cell value of the CSV input.
type csvLeakDomain struct{}

func (d csvLeakDomain) register(reg stepdef.Registry) {
	reg.Step(`^no state or audit record of the run holds a path of the IO root or a cell value of the CSV input$`, d.noLeak)
}

// noLeak scans every field of every state and audit record carrying the run's run_id for
// the CSV input's absolute path (and the IO root's) and for any cell value of the input.
func (csvLeakDomain) noLeak(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	s := csvIOKey.Of(sc.St)
	input, _, _ := s.inputFile()
	if input == "" {
		return fmt.Errorf("no CSV input was written in this scenario")
	}
	runID, err := kit.CurrentRunID(ctx)
	if err != nil {
		return err
	}
	needles := []string{input, s.root(kit.FixturesOf(ctx).Scope().ID())}
	if real, err := filepath.EvalSymlinks(input); err == nil && real != input {
		needles = append(needles, real)
	}
	for _, r := range s.written() {
		needles = append(needles, r[0], r[1])
	}
	var leaks []string
	scanned := 0
	for _, role := range []string{target.RoleState, target.RoleAudit} {
		recs, err := kit.ReadExact(ctx, sc, role, kit.DecodeRecordText, kit.FieldIs("run_id", runID))
		if err != nil {
			return err
		}
		scanned += len(recs)
		for _, rec := range recs {
			for _, c := range slices.Sorted(maps.Keys(rec.Fields)) {
				for _, n := range needles {
					if n != "" && strings.Contains(rec.Fields[c], n) {
						leaks = append(leaks, fmt.Sprintf("%s %s $id %s field %s", role, rec.RecordType, rec.RecordID, c))
						break
					}
				}
			}
		}
	}
	if err := sc.St.On("state.NODE_STATE.status_reason", "audit.NODE_ATTEMPT.error_message").Assert("state and audit records of the run scanned", ">= 1", scanned, scanned >= 1); err != nil {
		return err
	}
	return sc.St.On("state.NODE_STATE.status_reason", "audit.NODE_ATTEMPT.error_message").Equal("state and audit fields of the run holding a path of the IO root or a cell value of the CSV input", "(none)", kit.OrNone(strings.Join(leaks, "; ")))
}
