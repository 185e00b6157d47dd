Feature: P2-16 CLOSE against a resumed run — the Network lock decides

  Acceptance 8b (scenarios.md §2.7.5). A resumed run is held right after the first lease
  heartbeat that succeeded once its node's Attempt was created (a heartbeat only happens
  while the Network lock is held; FlowNet also heartbeats before each write, product-contract
  §3.7, so the resume's first heartbeat comes before its node starts, and holding that one
  would keep the node from ever starting): an
  archive-run then cannot take the lock and is REJECTED / LOCK_CONFLICT, holding nothing
  (lock_released true), and the Run stays ACTIVE. Once the resumed run has ended FAILED, the
  archive-run archives it, and the archived Run is never resumed. The resumed run lives until
  that heartbeat (at most 3 s into its node) and the CLOSE because its failing node's first read of
  顧客管理 is held by a barrier, on a tenant of any speed (declared after the first run, whose
  own reads go through the same proxy: a resume must see the base URL the first run recorded).

  @p2-16-05-close-rerun-race @p2-16 @acc-8b
  Scenario: archive-run loses to a resumed run holding the Network lock, then archives it; no resume afterwards
    Given the network fixture "network-p216-longfail.yaml"
    And the kintone traffic of the scope's kSQL-Flow jobs goes through a proxy
    And FlowNet has run the network for the scope's business key with an invalid customers token as "first run" and exited with code 1
    And the run is "FAILED"
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    And the kintone traffic of "resumed run" goes through a fault proxy
    And barrier "heartbeat_after" in the fault proxy of "resumed run" holds the PUT of record in the state app after it succeeded when it carries "heartbeat_at", the first sent after the POST of record in the audit app carrying "attempt_key"
    When FlowNet resumes the run by its id in the background as "resumed run"
    And barrier "long read" is reached
    And barrier "heartbeat_after" is reached
    And the operator archives the run as "archive while resumed"
    Then "archive while resumed" exits with code 1
    And "archive while resumed" printed outcome "REJECTED" with code "LOCK_CONFLICT" and lock_released true
    And the run's lifecycle_status is "ACTIVE"
    When barrier "heartbeat_after" is released
    And barrier "long read" is released
    Then "resumed run" exits with code 1
    And the run is "FAILED"
    And node "n1_longfail" has attempts numbered "1,2", all "FAILED"
    When the operator archives the run as "archive after the resume"
    Then "archive after the resume" exits with code 0
    And "archive after the resume" printed outcome "ARCHIVED" with audit "RECORDED" and lock_released true
    And the run's lifecycle_status is "ARCHIVED"
    When FlowNet resumes the run by its id as "resume of the archived run"
    Then "resume of the archived run" exits with code 1
    And "resume of the archived run" is refused with "RUN_NOT_RESUMABLE"
    And node "n1_longfail" has attempts numbered "1,2", all "FAILED"
    And barrier "heartbeat_after" arrived exactly once, with response status 200
