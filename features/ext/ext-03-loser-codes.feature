Feature: EXT the loser of a Node State race — 409 GAIA_CO02 and 400 GAIA_DA02 both fold to REVISION_CONFLICT

  product-contract §2.6 (and the original's fact table, m3-canonical-key-conflict): the loser
  of two concurrent updates of one record may get 409 GAIA_CO02 or 400 GAIA_DA02 from
  kintone, and FlowNet must report both as REVISION_CONFLICT; a DA02 says nothing about who
  won, so it is decided by a re-read. On the emulator (and on kintone) the stale write gets a
  409, so which code the loser sees is decided here by its fault proxy, one example each.

  Two operators resolve the same FAILED non-idempotent node at once (resolve-node takes no
  Network lock). Where each hold and fault starts and ends: barrier "loser write" in the
  fault proxy of "the losing resolve" (declared before it starts) holds its Node State PUT —
  the only PUT to the state app whose record carries status_reason — before it is sent, after
  that resolve has read the Node State and written its resolution; while it is held, "the
  winning resolve" (no proxy) reads the same Node State and moves it. Releasing the barrier
  lets the loser's PUT, still fenced by the revision it read, reach fault "loser answer",
  which answers it with the example's code instead of forwarding it (once: it takes that one
  PUT). One proxy per process, so the barrier — not a request count — orders the two writes.
  The loser must surface REVISION_CONFLICT and the Node State must show exactly one write.
  (The loser's ATTEMPT_RESOLUTION, written before its Node State PUT, is left as it is.)

  @ext
  Scenario Outline: the losing resolve answered <status> <code> reports REVISION_CONFLICT, and exactly one write persists
    Given the network fixture "network-nonidem.yaml"
    And FlowNet has run the network for the scope's business key as "the first run" and exited with code 1
    And the latest attempt of node "n2_nonidem" is "FAILED" with result code "ASSERT_FAILED"
    And the Node State of node "n2_nonidem" is noted
    And the kintone traffic of "the losing resolve" goes through a fault proxy
    And barrier "loser write" in the fault proxy of "the losing resolve" holds the PUT of record in the state app before it is sent when it carries "status_reason"
    And fault "loser answer" in the fault proxy of "the losing resolve" answers the PUT of record in the state app when it carries "status_reason" with <status> <code>, once
    When the operator resolves node "n2_nonidem" to SUCCESS by manual completion approved by "independent_approver" in the background as "the losing resolve"
    And barrier "loser write" is reached
    And the operator resolves node "n2_nonidem" to SUCCESS by manual completion approved by "independent_approver" as "the winning resolve"
    Then "the winning resolve" exits with code 0
    When barrier "loser write" is released
    Then "the losing resolve" is refused with "REVISION_CONFLICT"
    And fault "loser answer" fired exactly once
    And the Node State of node "n2_nonidem" took exactly one write since it was noted, and is "SUCCESS"

    @ext-03-loser-gaia-co02
    Examples: the loser gets 409 GAIA_CO02
      | status | code      |
      | 409    | GAIA_CO02 |

    @ext-03-loser-gaia-da02
    Examples: the loser gets 400 GAIA_DA02, decided by a re-read
      | status | code      |
      | 400    | GAIA_DA02 |
