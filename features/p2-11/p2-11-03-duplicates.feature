Feature: P2-11 duplicate STARTs — one key, one Run

  Acceptance 3 (scenarios.md §2.6.4). A START for a key whose Run is SUCCESS is a NOOP that
  names the Run; for a key whose Run is unfinished it is refused (START never resumes — that
  is a RERUN); two STARTs of one key handled by two pollers at the same time make one Run.

  @p2-11-03-duplicates @p2-11 @acc-3
  Scenario: NOOP on a finished key, RUN_ALREADY_EXISTS on an unfinished one, one Run from two concurrent STARTs
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-p211-explicit.yaml" as network "success"
    And network "success" may be started from the request app
    And the network fixture "network-p211-explicit.yaml" as network "unfinished"
    And network "unfinished" may be started from the request app
    And the network fixture "network-p211-explicit.yaml" as network "concurrent"
    And network "concurrent" may be started from the request app
    And the scenario turns to network "success"
    And FlowNet has run the network for the scope's business key as "success run" and exited with code 0
    And the revisions of every state and audit record of the scope are noted
    When a START request for network "success" with business key "{scope}" is created as "same key after SUCCESS"
    And the poller runs as "poller 1"
    Then request "same key after SUCCESS" is "DONE" with result code "NOOP_ALREADY_SUCCESS" and a message naming the run
    And no state or audit record of the scope changed since the revisions were noted
    Given the scenario turns to network "unfinished"
    And FlowNet has run the network for the scope's business key with an invalid customers token as "unfinished run" and exited with code 1
    And the revisions of every state and audit record of the scope are noted
    When a START request for network "unfinished" with business key "{scope}" is created as "same key while unfinished"
    And the poller runs as "poller 2"
    Then request "same key while unfinished" is "REJECTED" with result code "RUN_ALREADY_EXISTS" and a message naming the run
    And no state or audit record of the scope changed since the revisions were noted
    Given the scenario turns to network "concurrent"
    When a START request for network "concurrent" with business key "{scope}_concurrent" is created as "first"
    And a START request for network "concurrent" with business key "{scope}_concurrent" is created as "second"
    And pollers "poller A" and "poller B" run at the same time
    Then "poller A" exits with code 0
    And "poller B" exits with code 0
    And exactly one run exists for the business key "{scope}_concurrent", of this network
    And the run is "SUCCESS"
    And requests "first" and "second" settled as one START: one DONE, the other DONE "NOOP_ALREADY_SUCCESS" or REJECTED "LOCK_CONFLICT" or "RUN_ALREADY_EXISTS"
