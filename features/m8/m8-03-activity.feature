Feature: M8 activity — LIVE, INTERRUPTED, STOPPED on unfinished runs; none on a finished one

  scenarios.md §2.4.3 (product-contract §3.6). The long read's first read of 顧客管理 is held
  from before the drill run until its FlowNet parent was killed, so the LIVE status and the
  kill meet n1_longread running on a tenant of any speed; the orphan then finishes on its own.

  @m8-03-activity @m8
  Scenario: a run is LIVE, INTERRUPTED once its dead owner's lease expired, STOPPED when held; a SUCCESS run has no activity
    Given the network fixture "network-drill.yaml"
    And no kSQL-Flow process of this scope is alive
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "the drill run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    Then the status of the run shows activity "LIVE"
    When only the FlowNet process of "the drill run" is killed, leaving its kSQL-Flow child running
    And barrier "long read" is released
    Then the orphaned kSQL-Flow child of "the drill run" finishes and its JOB log row has a terminal status
    When the network lock of the run becomes a stale candidate
    Then the status of the run shows activity "INTERRUPTED"
    When the operator requests a stop of the run as "the stop"
    Then "the stop" exits with code 0
    And the status of the run shows activity "STOPPED"
    Given the network fixture "network-success.yaml" as network "done"
    When FlowNet has run the network for the scope's business key as "the success run" and exited with code 0
    Then the status of the run by its business key shows it "SUCCESS" with no activity
