Feature: P2-01 fail closed — a poller that cannot read the request app writes nothing and leaks nothing

  Acceptance 8 (scenarios.md §2.5.6). With a request token the request app refuses, the
  poller (and its --check) must end with exit 1 and an `Error [` line, write nothing — not to
  the request, not to the state or audit app — start no child, and never print the token or
  the request's reason label. The same holds when its reads never reach kintone at all (a
  fault proxy drops every request): no answer is not "no request".

  @p2-01-06-get-failclosed @p2-01 @acc-8
  Scenario: a bad request token ends the poller with exit 1, nothing written, no secret in its output
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-success.yaml"
    And FlowNet has run the network for the scope's business key with an invalid customers token as "the first run" and exited with code 1
    When a RERUN request for the run is created with the secret reason label "get-failure-secret-reason"
    And the request is recorded
    And the revisions of every state and audit record of the scope are noted
    And the poller runs with the request token "KSQL_FLOW_TEST_invalid_request_token" as "blind poller"
    Then "blind poller" exits with code 1
    And the stderr of "blind poller" has a line starting with "Error ["
    And the output of "blind poller" holds neither its request token nor the request's reason label
    And the request is unchanged
    And no state or audit record of the scope changed since the revisions were noted
    And the run has 1 invocation and the last one is "FAILED"
    When the poller check runs with the request token "KSQL_FLOW_TEST_invalid_request_token" as "blind check"
    Then "blind check" exits with code 1
    And the stderr of "blind check" has a line starting with "Error ["
    And the output of "blind check" holds neither its request token nor the request's reason label
    When the kintone traffic of "cut-off poller" goes through a fault proxy
    And the fault proxy of "cut-off poller" blocks everything
    And the poller runs as "cut-off poller"
    Then "cut-off poller" exits with code 1
    And the stderr of "cut-off poller" has a line starting with "Error ["
    And the request is unchanged
    And no state or audit record of the scope changed since the revisions were noted
