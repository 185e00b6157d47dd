Feature: M8 retry brake — the fourth automatic attempt of a node failing the same way is held back

  scenarios.md §2.4.2 (product-contract §1.3.4).

  @m8-02-retry-brake @m8
  Scenario: three automatic attempts, the fourth braked without a new attempt, an explicit rerun-from runs again
    Given the network fixture "network-brake.yaml"
    And FlowNet has run the network for the scope's business key as "the first run" and exited with code 1
    And node "n1_deterministic_fail" has attempts numbered "1", all "FAILED" with result code "ASSERT_FAILED"
    And the node states are:
      | node           | status  |
      | n2_independent | SUCCESS |
    When FlowNet resumes the run by its id as "the second attempt"
    Then "the second attempt" exits with code 1
    When FlowNet resumes the run by its id as "the third attempt"
    Then "the third attempt" exits with code 1
    And node "n1_deterministic_fail" has attempts numbered "1,2,3", all "FAILED" with result code "ASSERT_FAILED"
    When FlowNet resumes the run by its id as "the braked resume"
    Then "the braked resume" exits with code 1
    And node "n1_deterministic_fail" has attempts numbered "1,2,3", all "FAILED" with result code "ASSERT_FAILED"
    And the node states are:
      | node                  | status  | status_reason               | latest_attempt_no |
      | n1_deterministic_fail | FAILED  | RETRY_BRAKE:ASSERT_FAILEDx3 | 3                 |
      | n2_independent        | SUCCESS |                             | 1                 |
    And the last invocation has mode "RESUME"
    When FlowNet reruns the run from node "n1_deterministic_fail" by its id as "the explicit rerun"
    Then "the explicit rerun" exits with code 1
    And the stderr of "the explicit rerun" does not mention "RETRY_BRAKE"
    And node "n1_deterministic_fail" has attempts numbered "1,2,3,4", all "FAILED" with result code "ASSERT_FAILED"
    And the last invocation has mode "RERUN_FROM"
