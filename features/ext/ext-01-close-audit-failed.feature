Feature: EXT CLOSE whose RUN_ARCHIVED audit cannot be written — archived, audit PENDING

  Acceptance 8d (product-contract §1.9, the row ARCHIVED / audit "PENDING" /
  ARCHIVE_AUDIT_FAILED), which the original left to unit tests: its fault hook could only cut
  all traffic or hold a request, not fail the one audit INSERT. A FAILED Run is closed twice,
  on two networks: once by an operator's archive-run and once by a CLOSE request through the
  poller. Each time the Run becomes ARCHIVED, no RUN_ARCHIVED audit exists, the Network lock
  the CLOSE took is released, and the result says so: stdout ARCHIVED / audit PENDING /
  ARCHIVE_AUDIT_FAILED with exit 1, and the request settles DONE /
  RUN_ARCHIVED_AUDIT_PENDING naming the code and the event. The archived Run is never resumed.

  Where each fault starts and ends: fault "audit refused" lives in the fault proxy of "close"
  (declared before that archive-run starts) and answers every POST of a record to the audit
  app with 500, kintone's outage answer — the CLOSE's only insert into the audit app is its
  RUN_ARCHIVED audit, so the Run PUT and the lock writes before and after it (state app) pass;
  "always", so a product that resends the insert still meets it. It ends with the process.
  Fault "poller audit refused" does the same in the proxy of "poller": the poller itself
  inserts nothing in the audit app, and its archive-run child inherits its proxy.

  @ext-01-close-audit-failed @ext @acc-8d
  Scenario: a CLOSE whose audit insert fails archives the Run, leaves the audit PENDING and releases the lock
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-midfail.yaml" as network "operator"
    And the network fixture "network-midfail.yaml" as network "poller"
    And the scenario turns to network "operator"
    And FlowNet has run the network for the scope's business key as "failed run" and exited with code 1
    And the run is "FAILED"
    And the last NETWORK_LOCK record of the state app is noted
    And the kintone traffic of "close" goes through a fault proxy
    And fault "audit refused" in the fault proxy of "close" answers the POST of record in the audit app with 500, always
    When the operator archives the run as "close"
    Then "close" exits with code 1
    And "close" printed the archive result "outcome=ARCHIVED audit=PENDING code=ARCHIVE_AUDIT_FAILED run_revision=current lock_released=true"
    And fault "audit refused" fired at least once
    And the run is "FAILED"
    And the run's lifecycle_status is "ARCHIVED"
    And the run has no RUN_ARCHIVED audit under the event id "close" printed
    And the network lock "close" took is released
    Given the scenario turns to network "poller"
    And FlowNet has run the network for the scope's business key as "second failed run" and exited with code 1
    And the run is "FAILED"
    And the last NETWORK_LOCK record of the state app is noted
    And the kintone traffic of "poller" goes through a fault proxy
    And fault "poller audit refused" in the fault proxy of "poller" answers the POST of record in the audit app with 500, always
    When a CLOSE request for the run is created as "close request"
    And the poller runs as "poller"
    Then request "close request" is "DONE" with result code "RUN_ARCHIVED_AUDIT_PENDING" and a message containing "code=ARCHIVE_AUDIT_FAILED event_id=archive_"
    And fault "poller audit refused" fired at least once
    And the run's lifecycle_status is "ARCHIVED"
    And the run has no RUN_ARCHIVED audit under the event id request "close request" names
    And exactly one NETWORK_LOCK record was added since it was noted: a LOCKDONE: tombstone without lock key, "SUCCESS"
    When FlowNet resumes the run by its id as "resume of the archived run"
    Then "resume of the archived run" exits with code 1
    And "resume of the archived run" is refused with "RUN_NOT_RESUMABLE"
    And node "n2_fail" has attempts numbered "1", all "FAILED"
