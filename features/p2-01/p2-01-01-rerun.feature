Feature: P2-01 RERUN — a RERUN request re-runs a FAILED run as the same Run

  Acceptance 1 (scenarios.md §2.5.1). The poller is a real one-shot process, as the cron job
  of the product starts it: it claims the request with a revision-fenced PUT, runs
  `run-network --resume-run` as its child and writes the outcome back, correlated both ways.

  @p2-01-01-rerun @p2-01 @acc-1
  Scenario: a RERUN of a FAILED run is DONE, the run SUCCESS, one more invocation carrying the request
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-success.yaml"
    And FlowNet has run the network for the scope's business key with an invalid customers token as "the first run" and exited with code 1
    And the run is "FAILED"
    And the run has 1 invocation and the last one is "FAILED"
    And the poller check passes as "check"
    When a RERUN request for the run is created
    And the poller runs as "poller"
    Then "poller" exits with code 0
    And "poller" counted requested=1 claimed=1 completed=1 stale=0 skipped=0
    And the request is "DONE" with result code "OK"
    And the run is "SUCCESS"
    And the run has 2 invocations and the last one is "SUCCESS"
    And the last invocation was requested by the request: app-request, its record id and its creator's code
    And the result message of the request ends with "invocation_id=" and the last invocation's id
