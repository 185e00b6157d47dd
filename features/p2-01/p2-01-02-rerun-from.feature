Feature: P2-01 RERUN from a node — upstream kept; a braked node needs an explicit rerun-from

  Acceptance 2・9 (scenarios.md §2.5.2). A RERUN with rerun_from_node re-runs that node and
  its descendants and keeps the upstream's attempts. On a node the retry brake holds (three
  consecutive ASSERT_FAILED attempts), a plain RERUN is processed (DONE) but reports
  RETRY_BRAKE and runs nothing; a RERUN from that node runs it again.

  @p2-01-02-rerun-from @p2-01 @acc-2 @acc-9
  Scenario: RERUN from n2 keeps n1's attempt; a braked node answers RETRY_BRAKE until a RERUN from it
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-success.yaml" as network "rerun"
    And the network fixture "network-brake.yaml" as network "brake"
    And the scenario turns to network "rerun"
    And FlowNet has run the network for the scope's business key with an invalid deals token as "rerun first" and exited with code 1
    And the node states are:
      | node         | status  |
      | n1_extract   | SUCCESS |
      | n2_aggregate | FAILED  |
      | n3_finalize  | BLOCKED |
    When a RERUN request from node "n2_aggregate" for the run is created as "rerun from n2"
    And the poller runs as "poller 1"
    Then "poller 1" exits with code 0
    And request "rerun from n2" is "DONE" with result code "OK"
    And the run is "SUCCESS"
    And the last invocation has mode "RERUN_FROM"
    And node "n1_extract" has attempts numbered "1", all "SUCCESS"
    And the latest attempt of node "n2_aggregate" is "SUCCESS" with result code "OK"
    Given the scenario turns to network "brake"
    And FlowNet has run the network for the scope's business key as "brake first" and exited with code 1
    And FlowNet resumes the run by its id as "brake resume 1"
    And FlowNet resumes the run by its id as "brake resume 2"
    And "brake resume 2" exits with code 1
    And node "n1_deterministic_fail" has attempts numbered "1,2,3", all "FAILED" with result code "ASSERT_FAILED"
    When a RERUN request for the run is created as "plain rerun"
    And the poller runs as "poller 2"
    Then request "plain rerun" is "DONE" with result code "RETRY_BRAKE"
    And the last invocation has mode "RESUME"
    And node "n1_deterministic_fail" has attempts numbered "1,2,3", all "FAILED" with result code "ASSERT_FAILED"
    When a RERUN request from node "n1_deterministic_fail" for the run is created as "rerun from the braked node"
    And the poller runs as "poller 3"
    Then request "rerun from the braked node" is "DONE" with result code "NODE_FAILED_OR_BLOCKED"
    And the last invocation has mode "RERUN_FROM"
    And node "n1_deterministic_fail" has attempts numbered "1,2,3,4", all "FAILED" with result code "ASSERT_FAILED"
