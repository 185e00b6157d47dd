Feature: M5 kill — a kSQL-Flow child killed after its start marker becomes UNKNOWN

  Acceptance ≈23 (scenarios.md §2.1.5). The original found the child with PowerShell and was
  Windows-only; flowtest finds it by command line through harness/proc on Linux and Windows.

  @m5-kill-unknown @m5 @acc-23
  Scenario: the killed node and the run are UNKNOWN, the independent branch still succeeds
    Given the network fixture "network-diamond.yaml" with node "n1_customers" running "job-longread.sql"
    And no kSQL-Flow process of this scope is alive
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background
    And node "n1_customers" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And the kSQL-Flow child of that attempt is killed
    And the job lock of node "n1_customers" is held by the killed attempt
    Then the FlowNet run exits with code 1
    And the run becomes "UNKNOWN"
    And the node states are:
      | node         | status  | blocked_by   |
      | n1_customers | UNKNOWN |              |
      | n2_deals     | SUCCESS |              |
      | n3_join      | BLOCKED | n1_customers |
    And the latest attempt of node "n1_customers" is "UNKNOWN" with result code "NO_EXECUTION_RESULT" and a start marker
    And the last invocation is "UNKNOWN"
    When the job lock of node "n1_customers" is recovered by a named confirmer with this scenario's record as evidence
    Then the job lock recovery released the lock the inspection saw
