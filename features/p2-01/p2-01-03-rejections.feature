Feature: P2-01 rejections — a RERUN the poller must not run is REJECTED and changes nothing

  Acceptance 3 (scenarios.md §2.5.3): RUN_NOT_FOUND, RUN_STATUS_NOT_RERUNNABLE, RUN_LIVE and
  RUN_ON_HOLD, each leaving the scope's records as they were (record-by-record revisions). A
  request its requester withdrew before any claim (cancel_requested = 取消) is CANCELLED and
  never run (product-contract §3.4); it rides along with the SUCCESS-run case. The live run
  stays live because its long read is held by a barrier (the first read of 顧客管理 by the
  scope's kSQL-Flow jobs once the drill starts) until the RERUN was refused and the stop
  requested, on a tenant of any speed.

  @p2-01-03-rejections @p2-01 @acc-3
  Scenario: unknown, finished, live and held runs are refused, and a withdrawn request is not run
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-success.yaml" as network "success"
    And the network fixture "network-drill.yaml" as network "live"
    And the kintone traffic of the scope's kSQL-Flow jobs goes through a proxy
    When a RERUN request for the run id "{scope}_no_such_run" is created as "unknown run"
    And the poller runs as "poller 1"
    Then "poller 1" exits with code 0
    And request "unknown run" is "REJECTED" with result code "RUN_NOT_FOUND"
    Given the scenario turns to network "success"
    And FlowNet has run the network for the scope's business key as "success run" and exited with code 0
    And the revisions of every state and audit record of the scope are noted
    When a RERUN request for the run is created as "rerun of a SUCCESS run"
    And a RERUN request for the run is created and withdrawn by its requester as "withdrawn"
    And the poller runs as "poller 2"
    Then "poller 2" counted requested=2 claimed=1 cancelled=1
    And request "rerun of a SUCCESS run" is "REJECTED" with result code "RUN_STATUS_NOT_RERUNNABLE"
    And request "withdrawn" is "CANCELLED" with result code "CANCELLED_BY_REQUESTER" and was never claimed
    And no state or audit record of the scope changed since the revisions were noted
    Given the scenario turns to network "live"
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "live run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And a RERUN request for the run is created as "rerun of a live run"
    And the poller runs as "poller 3"
    Then request "rerun of a live run" is "REJECTED" with result code "RUN_LIVE"
    And the run has 1 invocation and the last one is "RUNNING"
    When the operator requests a stop of the run as "stop"
    Then "stop" exits with code 0
    When barrier "long read" is released
    Then "live run" exits with code 1
    And the revisions of every state and audit record of the scope are noted
    When a RERUN request for the run is created as "rerun of a held run"
    And the poller runs as "poller 4"
    Then request "rerun of a held run" is "REJECTED" with result code "RUN_ON_HOLD"
    And no state or audit record of the scope changed since the revisions were noted
