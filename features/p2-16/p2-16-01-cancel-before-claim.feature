Feature: P2-16 cancel before claim — a request withdrawn before any poller is never run

  Acceptance 1・12, record 11 (scenarios.md §2.7.1). The requester withdraws two START
  requests on the request board (cancel_requested = ["取消"], a revision-fenced PUT) before any
  poller saw them: one valid, one structurally invalid (its run_id is longer than a request
  allows). The cancellation takes precedence over claiming and over validation: both end
  CANCELLED / CANCELLED_BY_REQUESTER without claim fields, no invocation carries either, and
  no state or audit record of the scope changes. The poller's summary counts what it read by
  kind (product-contract §1.10 cycle order: valid and invalid REQUESTED records) and what it
  wrote: requested=1 (the valid one), invalid=1 (the invalid one, cancelled all the same),
  cancelled=2, nothing claimed or completed.

  @p2-16-01-cancel-before-claim @p2-16 @acc-1 @acc-11 @acc-12
  Scenario: a valid and an invalid START withdrawn before any claim are both CANCELLED and nothing runs
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-p211-explicit.yaml" as network "cancel"
    And network "cancel" may be started from the request app
    And the revisions of every state and audit record of the scope are noted
    When a START request for network "cancel" with business key "{scope}" is created as "valid"
    And a START request for network "cancel" with a run_id of 129 characters is created as "invalid run id"
    And the requester cancels request "valid" on the request board with the revision it was created at, and kintone answers 200
    And the requester cancels request "invalid run id" on the request board with the revision it was created at, and kintone answers 200
    And the poller runs as "poller"
    Then "poller" exits with code 0
    And "poller" counted requested=1 claimed=0 completed=0 cancelled=2 invalid=1
    And request "valid" is "CANCELLED" with result code "CANCELLED_BY_REQUESTER" and was never claimed
    And request "invalid run id" is "CANCELLED" with result code "CANCELLED_BY_REQUESTER" and was never claimed
    And no run invocation was requested by request "valid"
    And no run invocation was requested by request "invalid run id"
    And no state or audit record of the scope changed since the revisions were noted
