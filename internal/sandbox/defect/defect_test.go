package defect

// The catalogue, the switch files and the hooks must stay in step: a switch without an
// entry would never be proven caught, an entry without a hook plants nothing, and a switch
// that is on without its tag would ship a defect.

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

type entry struct {
	Name      string `yaml:"name"`
	Component string `yaml:"component"`
}

func catalogue(t *testing.T) []entry {
	t.Helper()
	data, err := os.ReadFile("defects.yaml")
	require.NoError(t, err)
	var cat struct {
		Defects []entry `yaml:"defects"`
	}
	require.NoError(t, yaml.Unmarshal(data, &cat))
	require.NotEmpty(t, cat.Defects)
	return cat.Defects
}

// constName is the switch constant of a defect: resume-prints-new → ResumePrintsNew.
func constName(name string) string {
	var b strings.Builder
	for _, w := range strings.Split(name, "-") {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

func TestEveryDefectHasItsSwitchPairAndHook(t *testing.T) {
	sources := sandboxSources(t)
	for _, d := range catalogue(t) {
		file := strings.ReplaceAll(d.Name, "-", "_")
		tag := "defect_" + file
		c := constName(d.Name)
		for _, side := range []struct {
			suffix, build, value string
		}{{"_on.go", "//go:build " + tag, "true"}, {"_off.go", "//go:build !" + tag, "false"}} {
			data, err := os.ReadFile(file + side.suffix)
			if !assert.NoError(t, err, "defect %s", d.Name) {
				continue
			}
			text := string(data)
			assert.True(t, strings.HasPrefix(text, side.build+"\n"), "%s%s starts with %q", file, side.suffix, side.build)
			assert.Contains(t, text, "const "+c+" = "+side.value+"\n", "%s%s", file, side.suffix)
		}
		hook := "defect." + c
		var users []string
		for path, src := range sources {
			if strings.Contains(src, hook) {
				users = append(users, path)
			}
		}
		sort.Strings(users)
		require.NotEmpty(t, users, "defect %s: no hook reads %s in sandbox/", d.Name, hook)
		assert.Contains(t, users[0], filepath.Join("sandbox", componentDir(d.Component)), "defect %s bites in its component %s", d.Name, d.Component)
	}
}

func TestEverySwitchIsCatalogued(t *testing.T) {
	named := map[string]bool{}
	for _, d := range catalogue(t) {
		named[strings.ReplaceAll(d.Name, "-", "_")] = true
	}
	files, err := filepath.Glob("*_on.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := strings.TrimSuffix(f, "_on.go")
		assert.True(t, named[name], "%s has no entry in defects.yaml", f)
		_, err := os.Stat(name + "_off.go")
		assert.NoError(t, err, "%s has no _off.go twin", f)
	}
}

// Built without tags (as here, and as shipped), every switch is off.
func TestShippedBuildHasEveryDefectOff(t *testing.T) {
	switches := []bool{ResumeRerunsSuccess, ResumeRestartsAttemptNo, LockConflictFailsNode, KilledChildFailed,
		DownstreamNotBlocked, BlockedByMissing, InvocationHostIgnoresEnv, ArchivePrincipalFromHost, RunJsonAggregateStale, RunJsonListsNull, RunJsonOutcomeFromFlag, ArchiveAuditResultCodeMissing, CapabilityCheckIgnoresInputs, ResumePrintsNew, JobLogWrongCorrelation,
		KintoneAcceptsDuplicateUnique, KintoneIgnoresStaleRevision, KintoneUniqueCheckNotAtomic, IndependentBranchSkipped,
		DeferralWithoutNodesDeferred, DeferralMarksRunFailed, JobLogWrongExecutionId, ExtraInvocation,
		RunKeyOmitsProfile, ResumeReportsInvocationId, NewRunReportsInvocationId, ForceUnlockMissesDeadHolder, ResultStartedAtIsAsOf,
		ResumeExecutesWorkingCopy, TopoOrderLastReadyFirst,
		ClaimWithoutRevision, NodeStateWithoutRevision, ClaimConflictAdoptedByHost, StaleRequestReexecuted, RequestedByWithoutCreator, StartResumesUnfinished,
		FinalizeRetryDropsCancelIgnored,
		PollerReadErrorSwallowed, RerunSkipsLiveCheck, CancelRequestedIgnored, RerunFromNodeDropped,
		StartIgnoresAppStart, ReleaseResumesRun, ScheduledForNotAsOf,
		ApproverCheckMissing, ResumeForgetsNonIdempotent, ForceUnlockAcceptsLiveLease, ForceUnlockRefusalAudited,
		StatusBumpsRevision, StatusShowsLeaseToken, CloudRunOwnerUnchecked, CloudRunProbeWithoutToken,
		StopIgnoredAtNodeBoundary, StopClosesInvocationOnly, ReleaseKeepsHold, RetryBrakeNeverFires, ActivityIgnoresLeaseExpiry,
		RetryBrakeIgnoresResultCode, RetryBrakeStopsAtCancelled,
		RerunFromIgnoresNonIdempotent, RerunFromRefusesUnexecuted, HeartbeatOnEveryTick,
		DrainPastLeaseDeadline, NextNodeDespiteLostLease, StopClosesRunOnly,
		ReleaseRefusesTerminalRun, CloseWithoutNetworkLock, ArchivedRunResumable,
		IoPathLinksUnchecked, InputAuditLeaksCell, ExportNotAtomic, OutputAuditNamesPath, ExportWritesBom,
		ImportReadsFirstChunk, ExportHeaderUppercase, ResumeSkipsInputDigest,
		StaleLockTakenOver,
		AttemptFinishedAtRoundedUp, ScheduledPeriodInUtc,
		HoldPolledDuringNode, ExportSjisIbmCodes,
		ArchiveAuditFailureRecorded, ArchiveLostResponseNotReread, ArchiveAuditResponseNotCompared, GaiaDa02NotFolded,
		RecordJobUnlockAcceptsForeignJobKey, RunInsertLoserRetries, RunInsertLostResponseNotAdjudicated, GaiaCo02Resent, CloseClearsLateHold, ReleaseRefusesArchivedRun, CloseArchivesUnknownRun,
		ArchiveRetryUnbounded, ArchiveConflictTakenAsArchived, ArchiveReleaseFailureIgnored, ArchiveLostAuditNotReread,
		ArchiveUnreadableRunTakenAsArchived, ArchiveAuditWithoutFence, CloseLockUnreleasedSettledArchived,
		StartTrustsLookupBeforeLock, StartCoalescedInCycle, ResumeChecksArchivedBeforeLock}
	for _, on := range switches {
		assert.False(t, on)
	}
	// The list above must name every switch.
	files, err := filepath.Glob("*_off.go")
	require.NoError(t, err)
	assert.Len(t, files, len(switches), "a new switch must be added to this test's list")
}

// sandboxSources are the non-test Go files of sandbox/ outside this package, by path.
func sandboxSources(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	self, err := filepath.Abs(".")
	require.NoError(t, err)
	root := filepath.Dir(self)
	goFile := regexp.MustCompile(`\.go$`)
	require.NoError(t, filepath.WalkDir(root, func(path string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() {
			if path == self {
				return filepath.SkipDir
			}
			return nil
		}
		if !goFile.MatchString(path) || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Dir(root), path)
		out[rel] = string(data)
		return nil
	}))
	return out
}

// componentDir is the sandbox package of a defect's component: the catalogue names the kintone
// component after what it stands in for, its package is the emulator.
func componentDir(component string) string {
	if component == "kintone" {
		return "emulator"
	}
	return component
}
