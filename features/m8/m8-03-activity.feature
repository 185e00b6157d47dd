Feature: M8 activity — LIVE, INTERRUPTED, STOPPED on unfinished runs; none on a finished one

  scenarios.md §2.4.3 (product-contract §3.6).

  @m8-03-activity @m8
  Scenario: a run is LIVE, INTERRUPTED once its dead owner's lease expired, STOPPED when held; a SUCCESS run has no activity
    Given the network fixture "network-drill.yaml"
    And no kSQL-Flow process of this scope is alive
    When FlowNet runs the network for the scope's business key in the background as "the drill run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    Then the status of the run shows activity "LIVE"
    When only the FlowNet process of "the drill run" is killed, leaving its kSQL-Flow child running
    Then the orphaned kSQL-Flow child of "the drill run" finishes and its JOB log row is "SUCCESS"
    When the network lock of the run becomes a stale candidate
    Then the status of the run shows activity "INTERRUPTED"
    When the operator requests a stop of the run as "the stop"
    Then "the stop" exits with code 0
    And the status of the run shows activity "STOPPED"
    Given the network fixture "network-success.yaml" as network "done"
    When FlowNet has run the network for the scope's business key as "the success run" and exited with code 0
    Then the status of the run by its business key shows it "SUCCESS" with no activity
