Feature: P2-11 START rejections — a START the poller must refuse changes nothing

  Acceptance 4 (scenarios.md §2.6.1; run first in the series). Every case leaves the scope's
  state and audit records as they were, record by record; the NETWORK_LOCK tombstone an
  admission refusal leaves behind names no network and is the one thing tolerated
  (scenarios.md §2.6). A malformed scheduled_for never becomes a request: kintone refuses it.

  @p2-11-04-rejections @p2-11 @acc-4
  Scenario: not allowed, key-policy, run_id and max-active-runs rejections leave persistence unchanged
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-p211-explicit.yaml" as network "explicit"
    And network "explicit" may be started from the request app
    And the network fixture "network-p211-scheduled.yaml" as network "scheduled"
    And network "scheduled" may be started from the request app
    And the network fixture "network-p211-explicit.yaml" as network "app start off"
    And the network fixture "network-p211-explicit.yaml" as network "not listed"
    And network "not listed" is left out of the poller's allow-list
    And the network fixture "network-p211-explicit.yaml" as network "max"
    And network "max" may be started from the request app
    And the revisions of every state and audit record of the scope are noted
    When a START request for network "not listed" with business key "{scope}" is created as "not listed"
    And the poller runs as "poller 1"
    Then request "not listed" is "REJECTED" with result code "NETWORK_NOT_ALLOWED" and a message containing "NOT_IN_ALLOWLIST"
    When a START request for network "app start off" with business key "{scope}" is created as "app start off"
    And the poller runs as "poller 2"
    Then request "app start off" is "REJECTED" with result code "NETWORK_NOT_ALLOWED" and a message containing "APP_START_DISABLED"
    When a START request for network "scheduled" with business key "{scope}" is created as "key without as_of"
    And a START request for network "explicit" with scheduled_for "2026-08-15T00:00:00.000Z" is created as "scheduled_for on an explicit key"
    And a START request for network "explicit" is created with:
      | name         | with a run id     |
      | business_key | {scope}           |
      | run_id       | {scope}_some_run  |
    And the poller runs as "poller 3"
    Then "poller 3" counted requested=3 claimed=3 completed=3
    And request "key without as_of" is "REJECTED" with result code "AS_OF_UNDEFINED"
    And request "scheduled_for on an explicit key" is "REJECTED" with result code "KEY_POLICY_MISMATCH"
    And request "with a run id" is "REJECTED" with result code "RUN_ID_NOT_ALLOWED"
    When a START request for network "scheduled" with scheduled_for "not-a-timestamp" is refused by kintone itself
    Then no state or audit record of the scope changed since the revisions were noted
    Given the scenario turns to network "max"
    And FlowNet has run the network for the scope's business key with an invalid customers token as "blocker" and exited with code 1
    And the revisions of every state and audit record of the scope are noted
    When a START request for network "max" with business key "{scope}_second" is created as "second key"
    And the poller runs as "poller 4"
    Then request "second key" is "REJECTED" with result code "MAX_ACTIVE_RUNS" and a message naming the run
    And no state or audit record of the scope changed since the revisions were noted
