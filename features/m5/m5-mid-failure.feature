Feature: M5 mid failure — a deterministic failure in the middle blocks what depends on it

  Acceptance 1 (scenarios.md §2.1.2).

  @m5-mid-failure @m5 @acc-1
  Scenario: the middle node fails with ASSERT_FAILED and its downstream is BLOCKED
    Given the network fixture "network-midfail.yaml"
    When FlowNet runs the network for the scope's business key
    Then the FlowNet run exits with code 1
    And exactly one run exists for the business key
    And the run is "FAILED"
    And the node states are:
      | node        | status  | status_reason | blocked_by |
      | n1_extract  | SUCCESS |               |            |
      | n2_fail     | FAILED  | ASSERT_FAILED |            |
      | n3_finalize | BLOCKED |               | n2_fail    |
    And the latest attempt of node "n2_fail" is "FAILED" with result code "ASSERT_FAILED"
    And the run has 1 invocation and the last one is "FAILED"
