Feature: P2-16 the race of a requester's cancel and a poller's claim, decided by revision

  Acceptance 2 (scenarios.md §2.7.2). Both sides write the request record with the revision
  they read, so whoever writes second loses with 409. Barriers force every order, each hold in
  the fault proxy of one poller, on the request's own record ($id), matched by a field only
  that PUT of the lifecycle carries (product-contract §1.10).

  Cancel wins: "claim_before" holds the claim PUT (it carries claimed_at) before it is sent. It
  starts when poller 1 has read the request REQUESTED and tries to claim it, and ends once the
  requester's cancel (the request board's PUT, with the revision read at creation) has been
  answered 200: the held claim then carries a stale revision and loses, poller 1 leaves the
  request REQUESTED, and poller 2 cancels it; nothing runs.

  Claim wins: "claim_after" holds the answer to poller 3's claim PUT after kintone applied it.
  It starts when the request is ACCEPTED and ends once the cancel, with the revision read
  before the claim, has been refused 409: the request runs to its end, never CANCELLED.

  Cancel after claim (§1.10 step 5): "finalize_before" holds poller 4's finalize PUT (it alone
  carries result_code) before it is sent. It starts when the START has been claimed, run and
  re-read by the finalizer without a cancel, and ends once the requester's cancel, with the
  revision the board reads at that moment (ACCEPTED), has been answered 200 — so the cancel
  lands after the claim and before the outcome is written. Released, the finalize PUT carries
  the revision of the finalizer's re-read and loses 409; the finalizer re-reads once, sees
  cancel_requested and writes the same outcome with " (cancel_ignored)" appended: DONE, the
  invocation's result code, never CANCELLED. Poller 5 then finds nothing to do and the run
  keeps its one invocation: the late cancel re-executed nothing.

  @p2-16-02-cancel-claim-race @p2-16 @acc-2
  Scenario: cancel before the claim is sent wins; a claim that succeeded first wins; a cancel after the claim is ignored
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
    When a START request for network "race" with business key "{scope}_late" is created as "late cancel"
    And the kintone traffic of "poller 4" goes through a fault proxy
    And barrier "finalize_before" in the fault proxy of "poller 4" holds the PUT of request "late cancel" in the request app before it is sent when it carries "result_code"
    And the poller starts as "poller 4"
    And barrier "finalize_before" is reached
    Then request "late cancel" becomes "ACCEPTED"
    When the requester cancels request "late cancel" on the request board with the revision it reads now, and kintone answers 200
    And barrier "finalize_before" is released
    Then "poller 4" exits with code 0
    And exactly one run exists for the business key "{scope}_late", of this network
    And request "late cancel" kept the outcome of the run's last invocation, its message marked cancel_ignored
    And barrier "finalize_before" arrived exactly once, with response status 0
    When the poller runs as "poller 5"
    Then "poller 5" counted claimed=0 completed=0 cancelled=0
    And request "late cancel" kept the outcome of the run's last invocation, its message marked cancel_ignored
    And the run has 1 invocation and the last one is "SUCCESS"
