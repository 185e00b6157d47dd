Feature: M5 resume — the same Run resumes and keeps what succeeded

  Acceptance 2・3・4 (scenarios.md §2.1.3).

  @m5-resume @m5 @acc-2 @acc-3 @acc-4
  Scenario: an identical call with --resume reuses the run and re-runs only the failed node
    Given the network fixture "network-midfail.yaml"
    And FlowNet has run the network for the scope's business key as "the first run" and exited with code 1
    When FlowNet runs the network again with --resume and the identical call as "the resumed run"
    Then "the resumed run" exits with code 1
    And "the first run" and "the resumed run" received the same identity: profile, network, business key and run key
    And "the resumed run" reported the run id that "the first run" reported, the run persisted for the business key
    And exactly one run exists for the business key
    And node "n1_extract" has attempts numbered "1", all "SUCCESS"
    And node "n2_fail" has attempts numbered "1,2", all "FAILED" with result code "ASSERT_FAILED"
    And the node states are:
      | node        | status  | latest_attempt_no |
      | n1_extract  | SUCCESS | 1                 |
      | n2_fail     | FAILED  | 2                 |
      | n3_finalize | BLOCKED |                   |
    And the run has 2 invocations and exactly one with mode "RESUME" preserving "n1_extract"
