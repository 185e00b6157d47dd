Feature: P2-01 STOP and RELEASE requests — a hold at the node boundary, released without running

  Acceptance 4・5 (scenarios.md §2.5.4). A STOP request becomes a hold (`cancel-run`): the
  running node finishes, no later node starts, the invocation closes CANCELLED /
  STOP_REQUESTED. A RELEASE request lifts the hold and runs nothing; a RERUN then completes the
  Run. A RELEASE of a Run without a hold is refused. The long node stays RUNNING because its
  first read of 顧客管理 is held by a barrier until the STOP request was processed, on a tenant
  of any speed.

  @p2-01-04-stop-release @p2-01 @acc-4 @acc-5
  Scenario: STOP holds the drill at the node boundary, RELEASE runs nothing, RERUN completes it, RELEASE without hold is refused
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-drill.yaml"
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "drill run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And a STOP request for the run is created as "stop"
    And the poller runs as "poller 1"
    Then request "stop" is "DONE" with result code "STOP_REQUESTED"
    When barrier "long read" is released
    Then "drill run" exits with code 1
    And the last invocation is "CANCELLED" with result code "STOP_REQUESTED"
    And the node states are:
      | node           | status  | latest_attempt_no |
      | n1_longread    | SUCCESS | 1                 |
      | n2_independent | WAITING | 0                 |
      | n3_join        | WAITING | 0                 |
    And the status of the run shows activity "STOPPED"
    When a RELEASE request for the run is created as "release"
    And the poller runs as "poller 2"
    Then request "release" is "DONE" with result code "RELEASED"
    And the run has 1 invocation and the last one is "CANCELLED"
    And the status of the run shows activity "INTERRUPTED"
    When a RERUN request for the run is created as "rerun"
    And the poller runs as "poller 3"
    Then request "rerun" is "DONE" with result code "OK"
    And the run is "SUCCESS"
    And the run has 2 invocations and the last one is "SUCCESS"
    When a RELEASE request for the run is created as "release without hold"
    And the poller runs as "poller 4"
    Then request "release without hold" is "REJECTED" with result code "RUN_NOT_ON_HOLD"
    And the run has 2 invocations and the last one is "SUCCESS"
