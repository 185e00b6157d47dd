Feature: M6 UNKNOWN isolation — the same isolation on the 30-second-lease drill network

  scenarios.md §2.2.2. The original was Windows-only (PowerShell process discovery).

  @m6-02-unknown-isolation @m6
  Scenario: killing the long read makes it UNKNOWN, blocks the join and spares the independent node
    Given the network fixture "network-drill.yaml"
    And no kSQL-Flow process of this scope is alive
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And the kSQL-Flow child of that attempt is killed
    And the job lock of node "n1_longread" is held by the killed attempt
    Then the FlowNet run exits with code 1
    And the run becomes "UNKNOWN"
    And the node states are:
      | node           | status  | blocked_by  |
      | n1_longread    | UNKNOWN |             |
      | n2_independent | SUCCESS |             |
      | n3_join        | BLOCKED | n1_longread |
    When the job lock of node "n1_longread" is recovered by a named confirmer with this scenario's record as evidence
    Then the job lock recovery released the lock the inspection saw
