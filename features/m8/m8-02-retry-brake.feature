Feature: M8 retry brake — the fourth automatic attempt of a node failing the same way is held back

  scenarios.md §2.4.2 (product-contract §1.3.4). Part one: a node failing with ASSERT_FAILED
  on every attempt is braked on the fourth resume (RETRY_BRAKE:ASSERT_FAILEDx3, no new
  attempt) until an explicit rerun-from. Part two (network "mixed", issue 34): the brake
  counts the same result code only. The same node's working copy is edited before its first
  run so that it reads 顧客管理 before the failing ASSERT, and that first run gets an invalid
  customers token: attempt 1 fails with AUTH_ERROR, the resumes' attempts 2 and 3 with
  ASSERT_FAILED. Three consecutive FAILED attempts, but only two with the same code, so the
  fourth resume is not braked and makes attempt 4; the walk stops at the different code, so
  the fifth is braked with a count of 3 (attempts 4, 3, 2), not 4.
  Part three (network "skip"): the walk skips a CANCELLED / PREPARE_FAILED Attempt. After
  two ASSERT_FAILED attempts, a resume meets the node's job lock held by a standalone
  kSQL-Flow (its read held by a barrier of the scope's kSQL-Flow proxy, in place before the
  scenario's first run): attempt 3 is CANCELLED / PREPARE_FAILED and the node goes back to
  WAITING, so the next resume runs it (attempt 4, ASSERT_FAILED). Three same-code failures
  with the deferred attempt between them: the next resume is braked,
  RETRY_BRAKE:ASSERT_FAILEDx3, with no attempt 5.

  @m8-02-retry-brake @m8
  Scenario: three automatic attempts, the fourth braked without a new attempt, an explicit rerun-from runs again; the brake counts the same result code only and skips a deferred attempt
    Given the kintone traffic of the scope's kSQL-Flow jobs goes through a proxy
    And the network fixture "network-brake.yaml"
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
    Given the network fixture "network-brake.yaml" as network "mixed"
    And the working copy of the SQL of node "n1_deterministic_fail" has "ASSERT (SELECT 1) = 0, 'm8 deterministic failure: 1 is never 0';" replaced by "ASSERT (SELECT COUNT(*) FROM LAPP_顧客管理) < 0, 'm8 mixed failure: a count is never negative';"
    And FlowNet has run the network for the scope's business key with an invalid customers token as "the mixed first run" and exited with code 1
    And the latest attempt of node "n1_deterministic_fail" is "FAILED" with result code "AUTH_ERROR"
    When FlowNet resumes the run by its id as "the mixed second attempt"
    Then "the mixed second attempt" exits with code 1
    And the latest attempt of node "n1_deterministic_fail" is "FAILED" with result code "ASSERT_FAILED"
    When FlowNet resumes the run by its id as "the mixed third attempt"
    Then "the mixed third attempt" exits with code 1
    And node "n1_deterministic_fail" has attempts numbered "1,2,3", all "FAILED"
    And the latest attempt of node "n1_deterministic_fail" is "FAILED" with result code "ASSERT_FAILED"
    When FlowNet resumes the run by its id as "the unbraked resume"
    Then "the unbraked resume" exits with code 1
    And node "n1_deterministic_fail" has attempts numbered "1,2,3,4", all "FAILED"
    And the latest attempt of node "n1_deterministic_fail" is "FAILED" with result code "ASSERT_FAILED"
    And the node states are:
      | node                  | status  | status_reason | latest_attempt_no |
      | n1_deterministic_fail | FAILED  | ASSERT_FAILED | 4                 |
      | n2_independent        | SUCCESS |               | 1                 |
    When FlowNet resumes the run by its id as "the mixed braked resume"
    Then "the mixed braked resume" exits with code 1
    And node "n1_deterministic_fail" has attempts numbered "1,2,3,4", all "FAILED"
    And the node states are:
      | node                  | status  | status_reason               | latest_attempt_no |
      | n1_deterministic_fail | FAILED  | RETRY_BRAKE:ASSERT_FAILEDx3 | 4                 |
      | n2_independent        | SUCCESS |                             | 1                 |
    And the last invocation has mode "RESUME"
    Given the network fixture "network-brake.yaml" as network "skip"
    And FlowNet has run the network for the scope's business key as "the skip first run" and exited with code 1
    And FlowNet resumes the run by its id as "the skip second attempt"
    And "the skip second attempt" exits with code 1
    And node "n1_deterministic_fail" has attempts numbered "1,2", all "FAILED" with result code "ASSERT_FAILED"
    When FlowNet resumes the run by its id as "the deferred resume" while the holder, a standalone kSQL-Flow, holds the job lock of node "n1_deterministic_fail" with "brake-holder.sql"
    Then "the deferred resume" exits with code 1
    And the holder exits with code 0
    And the latest attempt of node "n1_deterministic_fail" is "CANCELLED" with result code "PREPARE_FAILED"
    And the node states are:
      | node                  | status  | status_reason  | latest_attempt_no |
      | n1_deterministic_fail | WAITING | PREPARE_FAILED | 3                 |
      | n2_independent        | SUCCESS |                | 1                 |
    When FlowNet resumes the run by its id as "the skip fourth attempt"
    Then "the skip fourth attempt" exits with code 1
    And the latest attempt of node "n1_deterministic_fail" is "FAILED" with result code "ASSERT_FAILED"
    When FlowNet resumes the run by its id as "the skip braked resume"
    Then "the skip braked resume" exits with code 1
    And the node states are:
      | node                  | status  | latest_attempt_no | status_reason               |
      | n1_deterministic_fail | FAILED  | 4                 | RETRY_BRAKE:ASSERT_FAILEDx3 |
      | n2_independent        | SUCCESS | 1                 |                             |
    And the latest attempt of node "n1_deterministic_fail" is "FAILED" with result code "ASSERT_FAILED"
    And the last invocation has mode "RESUME"
