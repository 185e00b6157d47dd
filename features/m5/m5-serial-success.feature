Feature: M5 serial success — three nodes run one after another and the JOB log correlates

  Acceptance: "serial SUCCESS" and "JOB-log correlation" (scenarios.md §2.1.1).

  @m5-serial-success @m5 @acc-serial-success @acc-job-log-correlation
  Scenario: a three-node chain runs serially to SUCCESS with correlated JOB log rows
    Given the network fixture "network-success.yaml"
    When FlowNet runs the network for the scope's business key
    Then the FlowNet run exits with code 0
    And exactly one run exists for the business key
    And the FlowNet run reported the run id of the run persisted for the business key
    And the run is "SUCCESS"
    And the node states are:
      | node         | status  |
      | n1_extract   | SUCCESS |
      | n2_aggregate | SUCCESS |
      | n3_finalize  | SUCCESS |
    And every node has exactly 1 attempt and it is "SUCCESS"
    And the run has 1 invocation and the last one is "SUCCESS"
    And the attempts of consecutive nodes do not overlap in time
    And the attempt times FlowNet recorded for consecutive nodes are in order to the minute, within the minutes the FlowNet run ran
    And the JOB log has exactly 3 rows correlated with the run
    And every attempt has exactly one JOB log row carrying its run, execution and job ids and status "SUCCESS"
