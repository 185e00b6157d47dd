Feature: P2-01 claims — one poller wins a claim race; stale claims are rejected, never re-run

  Acceptance 6・7 (scenarios.md §2.5.5). The claim is a revision-fenced PUT: of two pollers
  that both read the request as REQUESTED, only one can claim it. The race is forced: poller A
  is held at its claim PUT (a fault-proxy barrier) while poller B claims, runs and finishes;
  released, A's claim carries a stale revision. A claim whose heartbeat stopped (a dead
  poller, 10 minutes ago) is rejected as STALE and its operation is not executed again; a
  claim that is heartbeating while its child runs is not stale: that child is the run the
  long poller started, kept running by a barrier on its first read of 顧客管理 (the poller's
  children inherit its environment, so its run reaches kintone through the scope's kSQL-Flow
  proxy) until the competing poller has looked, on a tenant of any speed.

  @p2-01-05-claim-stale @p2-01 @acc-6 @acc-7
  Scenario: exactly one of two racing pollers claims; dead claims become STALE without re-execution; a live claim is not stale
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-success.yaml" as network "claim"
    And the network fixture "network-success.yaml" as network "unexecuted"
    And the network fixture "network-drill.yaml" as network "heartbeat"
    And the kintone traffic of the scope's kSQL-Flow jobs goes through a proxy
    And the scenario turns to network "claim"
    And FlowNet has run the network for the scope's business key with an invalid customers token as "claim first" and exited with code 1
    When a RERUN request for the run is created as "contested"
    And the kintone traffic of "poller A" goes through a fault proxy
    And barrier "claim" in the fault proxy of "poller A" holds the PUT of record in the request app before it is sent when it carries "claimed_at"
    And the poller starts as "poller A"
    And barrier "claim" is reached
    And the poller runs as "poller B"
    And barrier "claim" is released
    Then "poller A" exits with code 0
    And "poller B" exits with code 0
    And the claimed counts of "poller A" and "poller B" are 0 and 1 in some order
    And request "contested" is "DONE" with result code "OK"
    And the run has 2 invocations and the last one is "SUCCESS"
    Given the scenario turns to network "unexecuted"
    And FlowNet has run the network for the scope's business key with an invalid customers token as "unexecuted first" and exited with code 1
    When an ACCEPTED RERUN request for the run, claimed 10 minutes ago by a dead poller, is inserted as "stale on an unexecuted run"
    And the scenario turns to network "claim"
    And an ACCEPTED RERUN request for the run, claimed 10 minutes ago by a dead poller, is inserted as "stale on a re-executed run"
    And the poller runs with heartbeat 500 ms and stale-after 1000 ms as "recovery poller"
    Then "recovery poller" exits with code 0
    And "recovery poller" counted claimed=0 stale=2
    And request "stale on a re-executed run" is "REJECTED" with result code "STALE" and a message containing "do not request another operation"
    And request "stale on an unexecuted run" is "REJECTED" with result code "STALE" and a message containing "do not request another operation"
    And the run has 2 invocations and the last one is "SUCCESS"
    Given the scenario turns to network "unexecuted"
    Then the run has 1 invocation and the last one is "FAILED"
    Given the scenario turns to network "heartbeat"
    And FlowNet has run the network for the scope's business key with an invalid customers token as "heartbeat first" and exited with code 1
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When a RERUN request for the run is created as "long"
    And the poller starts with heartbeat 500 ms and stale-after 1000 ms as "long poller"
    Then request "long" becomes "ACCEPTED"
    And the claim of request "long" is renewed: its revision grows while it stays "ACCEPTED"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    When the poller runs with heartbeat 500 ms and stale-after 1000 ms as "competing poller"
    Then "competing poller" counted claimed=0 stale=0
    When barrier "long read" is released
    Then "long poller" exits with code 0
    And request "long" is "DONE" with result code "OK"
    And the run is "SUCCESS"
