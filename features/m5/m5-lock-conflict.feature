Feature: M5 lock conflict — a job lock held elsewhere defers the node, the other branch goes on

  Acceptance 10・24, plus "multiple roots / join" (scenarios.md §2.1.4). The standalone
  kSQL-Flow runs from its own working directory, so it reaches the distributed job lock in
  the JOB log instead of colliding on kSQL-Flow's per-directory local lock.

  @m5-lock-conflict @m5 @acc-10 @acc-24
  Scenario: the node whose job lock is held goes back to WAITING and keeps its attempt number
    Given the network fixture "network-diamond.yaml"
    When FlowNet runs the network while the holder, a standalone kSQL-Flow, holds the job lock of node "n1_customers" with "job-longread.sql"
    Then the FlowNet run exits with code 1
    And the holder exits with code 0
    And the node states are:
      | node         | status  | status_reason  | latest_attempt_no |
      | n1_customers | WAITING | PREPARE_FAILED | 1                 |
      | n2_deals     | SUCCESS |                |                   |
      | n3_join      | WAITING |                |                   |
    And the latest attempt of node "n1_customers" is "CANCELLED" with result code "PREPARE_FAILED"
    And the latest attempt of node "n2_deals" is "SUCCESS" with result code "OK"
    And the run is "RUNNING"
    And the last invocation is "CANCELLED" with result code "NODES_DEFERRED"
