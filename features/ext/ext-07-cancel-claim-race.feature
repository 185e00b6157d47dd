Feature: EXT-07 the free race of a requester's cancel and a poller's claim, decided by revision

  The sibling of p2-16-02 (acceptance 2, scenarios.md §2.7.2) without barriers: the poller and
  the requester start at once and nothing forces an order. Both sides write the request record
  with the revision they read (product-contract §1.10 step 4: the claim is a revision-fenced
  PUT; the board sends cancel_requested with the revision it read at creation), so whichever
  PUT kintone applies first wins and the other is refused 409.

  The requester is a named party of its own: its cancel goes through a fault proxy of its own,
  so `flowtest explore` orders it against the poller's writes like a process's (manifest:
  explore processes "poller 1" and "requester").

  - Cancel won (the cancel answered 200): nothing ran. Either poller 1 read the request after
    the cancel and closed it itself, or it read it before, its claim lost on revision and it
    left the request REQUESTED, and poller 2 closes it: CANCELLED / CANCELLED_BY_REQUESTER,
    never claimed, no run, no invocation requested by it. (A free run mostly sees the first:
    the cancel is one PUT, the poller a process that starts. Under explore only the second:
    the cancel is held until the poller's claim is held too.)
  - Claim won (the cancel answered 409): poller 1 ran the START to its end, DONE or REJECTED,
    never CANCELLED, never withdrawn (the cancel did not land), one run of the key and one
    invocation the request caused; poller 2 finds nothing to do.

  @ext-07-cancel-claim-race @ext
  Scenario: a requester's cancel and a poller's claim race freely; exactly one of them wins
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-p211-explicit.yaml" as network "race"
    And network "race" may be started from the request app
    When a START request for network "race" with business key "{scope}" is created as "contested"
    And the poller starts as "poller 1"
    And the requester cancels request "contested" on the request board in the background as "requester", with the revision it was created at
    Then the requester's cancel was answered 200 or 409
    And "poller 1" exits with code 0
    When the poller runs as "poller 2"
    Then "poller 2" exits with code 0
    And request "contested" settled the race of the requester's cancel and the claim of "poller 1", "poller 2" polling after both: cancel won (the cancel answered 200, CANCELLED / CANCELLED_BY_REQUESTER, never claimed, no run invocation) or claim won (the cancel answered 409, DONE or REJECTED never CANCELLED, one run)
