Feature: M6 resume identity — a resume is the same Run with a new invocation

  scenarios.md §2.2.1.

  @m6-01-resume-identity @m6
  Scenario: a resume prints RESUME, keeps the run id and adds no attempt to succeeded nodes
    Given the network fixture "network-m6-midfail.yaml"
    And FlowNet has run the network for the scope's business key as "the first run" and exited with code 1
    And "the first run" reported the run id of the run persisted for the business key
    And the run is "FAILED"
    And the run has 1 invocation and the last one is "FAILED"
    And at least one node has a "SUCCESS" attempt
    When FlowNet runs the network again with --resume and the identical call as "the resumed run"
    Then "the resumed run" exits with code 1
    And the stdout of "the resumed run" has a line starting with "RESUME: "
    And "the resumed run" reported the run id that "the first run" reported, the run persisted for the business key
    And the run has 2 invocations with distinct non-empty invocation ids
    And no node that had a "SUCCESS" attempt before "the resumed run" gained an attempt
