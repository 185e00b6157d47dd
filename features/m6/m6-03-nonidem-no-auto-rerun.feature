Feature: M6 non-idempotent node — a failed non-idempotent node is never re-run automatically

  scenarios.md §2.2.3. n2_nonidem is not idempotent and fails by ASSERT (the original's
  README says SQL_ERROR; its code expects ASSERT_FAILED). A resume must leave it alone; only
  an operator settles it, and completing a non-idempotent node by hand needs an approver
  other than the requester.

  @m6-03-nonidem-no-auto-rerun @m6
  Scenario: the resume skips the failed non-idempotent node; a distinct approver resolves it
    Given the network fixture "network-nonidem.yaml"
    And FlowNet has run the network for the scope's business key as "the first run" and exited with code 1
    And the latest attempt of node "n2_nonidem" is "FAILED" with result code "ASSERT_FAILED"
    When FlowNet runs the network again with --resume and the identical call as "the automatic resume"
    Then "the automatic resume" exits with code 1
    And node "n2_nonidem" has attempts numbered "1", all "FAILED" with result code "ASSERT_FAILED"
    And the node states are:
      | node        | status  | latest_attempt_no |
      | n1_extract  | SUCCESS | 1                 |
      | n2_nonidem  | FAILED  | 1                 |
      | n3_finalize | BLOCKED |                   |
    Given the revisions of every state and audit record of the scope are noted
    When the operator resolves node "n2_nonidem" to SUCCESS by manual completion approved by the requester as "the self-approved resolve"
    Then "the self-approved resolve" is refused with "DISTINCT_APPROVER_REQUIRED"
    And no state or audit record of the scope changed since the revisions were noted
    When the operator resolves node "n2_nonidem" to SUCCESS by manual completion approved by "independent_approver" as "the resolve"
    Then "the resolve" exits with code 0
    And exactly one ATTEMPT_RESOLUTION of node "n2_nonidem" records what "the resolve" was given
    And node "n2_nonidem" has attempts numbered "1", all "FAILED" with result code "ASSERT_FAILED"
    When FlowNet runs the network again with --resume and the identical call as "the final resume"
    Then "the final resume" exits with code 0
    And the run is "SUCCESS"
    And the node states are:
      | node        | status  | status_reason                    | latest_attempt_no |
      | n1_extract  | SUCCESS |                                  | 1                 |
      | n2_nonidem  | SUCCESS | NODE_MANUAL_COMPLETION_CONFIRMED | 1                 |
      | n3_finalize | SUCCESS |                                  | 1                 |
    And node "n2_nonidem" has attempts numbered "1", all "FAILED" with result code "ASSERT_FAILED"
