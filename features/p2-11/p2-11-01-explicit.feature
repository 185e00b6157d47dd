Feature: P2-11 START with an explicit business key

  Acceptance 1 (scenarios.md §2.6.2). A START request for an allow-listed network whose
  app_start is true creates the Run for the requested key and runs it; the request is DONE
  with the invocation's result code and correlated both ways.

  @p2-11-01-explicit @p2-11 @acc-1
  Scenario: START with an explicit key is DONE/OK and its Run SUCCESS, correlated with the request
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-p211-explicit.yaml" as network "explicit"
    And network "explicit" may be started from the request app
    When a START request for network "explicit" with business key "{scope}" is created
    And the poller runs as "poller"
    Then "poller" exits with code 0
    And "poller" counted requested=1 claimed=1 completed=1
    And the request is "DONE" with result code "OK"
    And exactly one run exists for the business key "{scope}", of this network
    And the run is "SUCCESS"
    And the node states are:
      | node         | status  |
      | n1_customers | SUCCESS |
      | n2_deals     | SUCCESS |
    And the run has 1 invocation and the last one is "SUCCESS"
    And the last invocation was requested by the request: app-request, its record id and its creator's code
    And the result message of the request ends with "invocation_id=" and the last invocation's id
