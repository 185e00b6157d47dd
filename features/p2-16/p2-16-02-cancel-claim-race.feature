Feature: P2-16 the race of a requester's cancel and a poller's claim, decided by revision

  Acceptance 2 (scenarios.md §2.7.2). Both sides write the request record with the revision
  they read, so whoever writes second loses with 409. Barriers force both orders. Cancel wins:
  the claim PUT of that request is held before it is sent, the requester's cancel (the request
  board's PUT) is answered 200, the held claim then loses on revision, and the next poller
  cancels the request; nothing runs. Claim wins: the claim is held after it succeeded, the
  cancel with the revision read before the claim is answered 409, and the request runs to its
  end, never CANCELLED.

  @p2-16-02-cancel-claim-race @p2-16 @acc-2
  Scenario: cancel before the claim is sent wins; a claim that succeeded first wins
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-p211-explicit.yaml" as network "race"
    And network "race" may be started from the request app
    When a START request for network "race" with business key "{scope}" is created as "cancel wins"
    And the kintone traffic of "poller 1" goes through a fault proxy
    And barrier "claim_before" in the fault proxy of "poller 1" holds the PUT of request "cancel wins" in the request app before it is sent when it carries "claimed_at"
    And the poller starts as "poller 1"
    And barrier "claim_before" is reached
    And the requester cancels request "cancel wins" on the request board with the revision it was created at, and kintone answers 200
    And barrier "claim_before" is released
    Then "poller 1" exits with code 0
    And request "cancel wins" is still "REQUESTED" and withdrawn: its claim lost on revision
    When the poller runs as "poller 2"
    Then request "cancel wins" is "CANCELLED" with result code "CANCELLED_BY_REQUESTER" and was never claimed
    And no run invocation was requested by request "cancel wins"
    And barrier "claim_before" arrived exactly once, with response status 0
    When a START request for network "race" with business key "{scope}_claim" is created as "claim wins"
    And the kintone traffic of "poller 3" goes through a fault proxy
    And barrier "claim_after" in the fault proxy of "poller 3" holds the PUT of request "claim wins" in the request app after it succeeded when it carries "claimed_at"
    And the poller starts as "poller 3"
    And barrier "claim_after" is reached
    Then request "claim wins" becomes "ACCEPTED"
    When the requester cancels request "claim wins" on the request board with the revision it was created at, and kintone answers 409
    And barrier "claim_after" is released
    Then "poller 3" exits with code 0
    And request "claim wins" ended "DONE" or "REJECTED", never "CANCELLED"
    And exactly one run exists for the business key "{scope}_claim", of this network
    And the last invocation was requested by the request: app-request, its record id and its creator's code
    And barrier "claim_after" arrived exactly once, with response status 200
