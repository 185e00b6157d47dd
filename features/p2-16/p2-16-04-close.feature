Feature: P2-16 CLOSE — archive-run through the request app

  Acceptance 6・7 (scenarios.md §2.7.4). A CLOSE of a FAILED Run archives it: the request is
  DONE / RUN_ARCHIVED naming the event, the Run keeps its status FAILED and becomes lifecycle
  ARCHIVED, exactly one RUN_ARCHIVED audit holds its five fields (and result code and service principal; resolved_at equals
  archived_at to the minute: kintone's DATETIME), the Network lock the CLOSE took is left as
  one LOCKDONE: tombstone, and the archived Run is never resumed; a second CLOSE changes
  nothing. A SUCCESS Run is not closable. A Run whose attempt is still being finalised (its
  finalize PUT held at a barrier) is not terminal; once it failed with a hold on it, it is on
  hold.

  @p2-16-04-close @p2-16 @acc-6 @acc-7
  Scenario: CLOSE archives a FAILED run once; SUCCESS, a running and a held run are not closable
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-midfail.yaml" as network "archive"
    And the network fixture "network-success.yaml" as network "success"
    And the network fixture "network-p216-longfail.yaml" as network "live"
    And the scenario turns to network "archive"
    And FlowNet has run the network for the scope's business key as "failed run" and exited with code 1
    And the run is "FAILED"
    And the last NETWORK_LOCK record of the state app is noted
    When a CLOSE request for the run is created as "close"
    And the poller runs as "poller 1"
    Then request "close" is "DONE" with result code "RUN_ARCHIVED" and a message containing "event_id=archive_"
    And the run is "FAILED"
    And the status of the run shows it "FAILED", lifecycle "ARCHIVED", with no hold
    And the run has exactly one RUN_ARCHIVED audit, of request "close", with its five fields
    And the RUN_ARCHIVED audit of the run says result code "RUN_ARCHIVED" and the service principal FlowNet was given
    And exactly one NETWORK_LOCK record was added since it was noted: a LOCKDONE: tombstone without lock key, "SUCCESS"
    When FlowNet resumes the run by its id as "resume of the archived run"
    Then "resume of the archived run" exits with code 1
    And "resume of the archived run" is refused with "RUN_NOT_RESUMABLE"
    And node "n2_fail" has attempts numbered "1", all "FAILED"
    Given the revisions of every state and audit record of the scope are noted
    When a CLOSE request for the run is created as "second close"
    And the poller runs as "poller 2"
    Then request "second close" is "DONE" with result code "RUN_ALREADY_ARCHIVED"
    And no state or audit record of the scope changed since the revisions were noted
    Given the scenario turns to network "success"
    And FlowNet has run the network for the scope's business key as "success run" and exited with code 0
    And the revisions of every state and audit record of the scope are noted
    When a CLOSE request for the run is created as "close of success"
    And the poller runs as "poller 3"
    Then request "close of success" is "REJECTED" with result code "RUN_STATUS_NOT_CLOSABLE"
    And no state or audit record of the scope changed since the revisions were noted
    Given the scenario turns to network "live"
    And the kintone traffic of "live run" goes through a fault proxy
    And barrier "finalize_before" in the fault proxy of "live run" holds the PUT of record in the audit app before it is sent when it carries "finished_at"
    When FlowNet runs the network for the scope's business key in the background as "live run"
    And barrier "finalize_before" is reached
    And a CLOSE request for the run is created as "close while running"
    And the poller runs as "poller 4"
    Then request "close while running" is "REJECTED" with result code "RUN_NOT_TERMINAL"
    And the status of the run shows it "RUNNING", lifecycle "ACTIVE", with no hold
    When a STOP request for the run is created as "stop"
    And the poller runs as "poller 5"
    Then request "stop" is "DONE" with result code "STOP_REQUESTED"
    When barrier "finalize_before" is released
    Then "live run" exits with code 1
    And the run is "FAILED"
    And the status of the run shows it "FAILED", lifecycle "ACTIVE", with a hold REQUESTED or ACCEPTED
    Given the revisions of every state and audit record of the scope are noted
    When a CLOSE request for the run is created as "close on hold"
    And the poller runs as "poller 6"
    Then request "close on hold" is "REJECTED" with result code "RUN_ON_HOLD"
    And no state or audit record of the scope changed since the revisions were noted
