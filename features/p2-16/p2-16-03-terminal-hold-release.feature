Feature: P2-16 a hold across termination — STOP, the run fails anyway, RELEASE, RERUN

  Acceptance 4 (scenarios.md §2.7.3). A STOP request taken while the long failing node runs
  is DONE / STOP_REQUESTED; the node still fails, so the Run ends FAILED with the hold still
  on it. A RELEASE lifts the hold whatever the Run's status and runs nothing; a RERUN then
  runs the Run again, which fails again with one more invocation. The failing node stays
  RUNNING because its first read of 顧客管理 is held by a barrier until the STOP request was
  processed, on a tenant of any speed.

  @p2-16-03-terminal-hold-release @p2-16 @acc-4
  Scenario: a STOP during the failing node leaves a hold on the FAILED run; RELEASE lifts it, RERUN runs it again
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-p216-longfail.yaml"
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "longfail run"
    And node "n1_longfail" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And a STOP request for the run is created as "stop"
    And the poller runs as "poller 1"
    Then request "stop" is "DONE" with result code "STOP_REQUESTED"
    When barrier "long read" is released
    Then "longfail run" exits with code 1
    And the run is "FAILED"
    And the node states are:
      | node         | status  | latest_attempt_no |
      | n1_longfail  | FAILED  | 1                 |
      | n2_dependent | BLOCKED | 0                 |
    And the run has 1 invocation and the last one is "FAILED"
    And the status of the run shows it "FAILED", lifecycle "ACTIVE", with a hold REQUESTED or ACCEPTED
    When a RELEASE request for the run is created as "release"
    And the poller runs as "poller 2"
    Then request "release" is "DONE" with result code "RELEASED"
    And the status of the run shows it "FAILED", lifecycle "ACTIVE", with no hold
    And the run has 1 invocation and the last one is "FAILED"
    When a RERUN request for the run is created as "rerun"
    And the poller runs as "poller 3"
    Then request "rerun" is "DONE" with result code "NODE_FAILED_OR_BLOCKED"
    And the run is "FAILED"
    And the run has 2 invocations and the last one is "FAILED"
    And node "n1_longfail" has attempts numbered "1,2", all "FAILED"
