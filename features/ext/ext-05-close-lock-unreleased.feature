Feature: EXT CLOSE through the poller whose lock release is refused — DONE / RUN_ARCHIVED_LOCK_UNRELEASED

  Acceptance 8f (product-contract §1.9, the row ARCHIVED / audit "RECORDED" / lock_released
  false, and its last column): a CLOSE request the poller settles while kintone refuses the
  release of the Network lock its archive-run took. The Run is archived and audited, the
  lock stays RUNNING under the CLOSE's event id, and the request says the Run is archived
  with its lock unreleased — DONE, never REJECTED (the Run is archived) and never
  RUN_ARCHIVED (an operator must see the lock).

  Where the fault starts and ends: fault "release refused" lives in the fault proxy of
  "poller" (declared before the poller starts; its archive-run child inherits the proxy) and
  answers 503 to every PUT of a state-app record whose record carries record_key — the lock's
  release into its tombstone (the poller itself writes no state-app record; a heartbeat
  addresses the lock by updateKey, the Run PUT carries no record_key); "always", so a product
  that retries the release still meets it. It ends with the poller. The request's result
  message names the event (`event_id=archive_…`, as the PENDING row's does): a decision, the
  contract's last column gives this row's code only.

  @ext @acc-8f @ext-05-close-lock-unreleased
  Scenario: a CLOSE request whose lock release is refused settles DONE "RUN_ARCHIVED_LOCK_UNRELEASED"
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-midfail.yaml"
    And FlowNet has run the network for the scope's business key as "failed run" and exited with code 1
    And the run is "FAILED"
    And the last NETWORK_LOCK record of the state app is noted
    And the kintone traffic of "poller" goes through a fault proxy
    And fault "release refused" in the fault proxy of "poller" answers the PUT of record in the state app when it carries "record_key" with 503, always
    When a CLOSE request for the run is created as "close request"
    And the poller runs as "poller"
    Then request "close request" is "DONE" with result code "RUN_ARCHIVED_LOCK_UNRELEASED" and a message containing "event_id=archive_"
    And fault "release refused" fired at least once
    And the run's lifecycle_status is "ARCHIVED"
    And the run has exactly one RUN_ARCHIVED audit under the event id request "close request" names
    And the network lock the CLOSE of request "close request" took is held under its event id
