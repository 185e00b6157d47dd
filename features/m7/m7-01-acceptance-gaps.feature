Feature: M7 acceptance gaps — serial topological execution, and a resume runs the saved SQL

  scenarios.md §2.3.1 (acceptance 5・26・28). Part A runs the drill network to SUCCESS and
  checks that the nodes ran one after another in stable topological order. Part B, in its own
  sub-scope, fails a node, edits the working copy of its SQL so that it would pass, and
  resumes: the node still fails, because a resume executes the SQL bundle saved with the Run,
  not the file on disk.

  @m7-01-acceptance-gaps @m7 @acc-5 @acc-26 @acc-28
  Scenario: serial execution in topological order, and a resume executes the saved SQL
    Given the network fixture "network-drill.yaml"
    When FlowNet runs the network for the scope's business key
    Then the FlowNet run exits with code 0
    And the run is "SUCCESS"
    And every node has exactly 1 attempt and it is "SUCCESS"
    And the attempts were created in the order "n1_longread, n2_independent, n3_join", with increasing record ids
    And the last invocation is "SUCCESS" with result code "OK"
    And the run has 1 invocation and the last one is "SUCCESS"
    And every attempt has exactly one JOB log row carrying its run, execution and job ids and status "SUCCESS"
    Given the network fixture "network-m6-midfail.yaml" in a fresh sub-scope "saved_sql"
    And FlowNet has run the network for the scope's business key as "the first run" and exited with code 1
    And the run is "FAILED"
    And the latest attempt of node "n2_fail" is "FAILED" with result code "ASSERT_FAILED"
    When the working copy of the SQL of node "n2_fail" has "(SELECT 1) = 0" replaced by "(SELECT 1) = 1"
    And FlowNet runs the network again with --resume and the identical call as "the resumed run"
    Then "the resumed run" exits with code 1
    And the stdout of "the resumed run" has a line starting with "RESUME: "
    And "the resumed run" reported the run id that "the first run" reported, the run persisted for the business key
    And node "n2_fail" has attempts numbered "1,2", all "FAILED" with result code "ASSERT_FAILED"
