Feature: EXT CLOSE under a fault — every other row of archive-run's result table

  Acceptance 8f (product-contract §1.9): the verdict of a CLOSE whose Run PUT, audit insert
  or lock release meets a fault, which the original left to unit tests. Each row closes a
  FAILED Run of its own with an operator's archive-run whose kintone traffic passes a fault
  proxy, and asserts what the row promises: the exit code, the JSON union on stdout (every
  field the row names, no audit or code it does not), the Run's lifecycle_status, the
  RUN_ARCHIVED audit under the event id the CLOSE printed, and the Network lock the CLOSE
  took (released into its tombstone, or still RUNNING under the event id).

  Where each fault starts and ends: fault "f" is declared in the proxy of "close" before that
  archive-run starts, so it is armed before its first request, and it ends with the process.
  It matches one kind of request only — the Run PUT is the only PUT that carries
  lifecycle_status, the RUN_ARCHIVED audit the only POST to the audit app, the lock's release
  into its tombstone the only PUT whose record carries record_key (a heartbeat addresses the
  lock by updateKey) — so every other request passes untouched:
    - a lost Run-PUT response: kintone applies the PUT and the proxy drops the connection
      instead of answering; the re-read finds the Run ARCHIVED and the CLOSE goes on;
    - a Run PUT reset before it reaches kintone, once: the re-read finds the Run ACTIVE and
      the one retry archives it; twice: the retry is lost too, the re-read finds the Run
      ACTIVE again and, the one retry spent, the write failed: REJECTED / ARCHIVE_WRITE_FAILED
      with the revision re-read (§1.9 keeps UNCONFIRMED for a Run that cannot be re-read, and
      for a 409; it names no verdict for a second ACTIVE, and the real FlowNet 1.0.0 answers
      this one);
    - a Run PUT answered 409 GAIA_CO02 (the Run moved, or someone else archived it): the
      re-read finds it still ACTIVE, so the outcome is UNCONFIRMED, never REJECTED;
    - a lost audit response: kintone inserts the audit and the proxy drops the answer; the
      re-read of OP:<event_id> finds this event's fields and the audit is RECORDED;
    - the release PUT answered 503 every time: the Run is archived and audited, the lock
      stays RUNNING under the event id and lock_released is false.

  @ext @acc-8f
  Scenario Outline: a CLOSE whose request meets a fault ends "<result>"
    Given the network fixture "network-midfail.yaml"
    And FlowNet has run the network for the scope's business key as "failed run" and exited with code 1
    And the run is "FAILED"
    And the last NETWORK_LOCK record of the state app is noted
    And the kintone traffic of "close" goes through a fault proxy
    And fault "f" in the fault proxy of "close" <fault>
    When the operator archives the run as "close"
    Then "close" exits with code <exit>
    And "close" printed the archive result "<result>"
    And fault "f" fired <fired>
    And the run's lifecycle_status is "<lifecycle>"
    And the run has <audit> RUN_ARCHIVED audit under the event id "close" printed
    And the network lock "close" took is <lock>

    @ext-02-lost-run-put-archived
    Examples: a lost Run-PUT response, the Run re-read ARCHIVED: the CLOSE continues
      | fault                                                                                              | exit | result                                                                    | fired        | lifecycle | audit       | lock     |
      | loses the response of the PUT of record in the state app when it carries "lifecycle_status", once | 0    | outcome=ARCHIVED audit=RECORDED run_revision=current lock_released=true | exactly once | ARCHIVED  | exactly one | released |

    @ext-02-run-put-reset-retried
    Examples: a Run PUT lost before kintone, the Run re-read ACTIVE: one retry archives it
      | fault                                                                               | exit | result                                                                    | fired        | lifecycle | audit       | lock     |
      | resets the PUT of record in the state app when it carries "lifecycle_status", once | 0    | outcome=ARCHIVED audit=RECORDED run_revision=current lock_released=true | exactly once | ARCHIVED  | exactly one | released |

    @ext-02-run-put-reset-unconfirmed
    Examples: the retry lost too, the Run re-read ACTIVE again: the write failed, rejected
      | fault                                                                                  | exit | result                                                                                | fired           | lifecycle | audit | lock     |
      | resets the PUT of record in the state app when it carries "lifecycle_status", 2 times | 1    | outcome=REJECTED code=ARCHIVE_WRITE_FAILED run_revision=current lock_released=true | exactly 2 times | ACTIVE    | no    | released |

    @ext-02-run-put-conflict
    Examples: a 409 on the Run PUT, the Run re-read ACTIVE: unconfirmed
      | fault                                                                                               | exit | result                                                                               | fired        | lifecycle | audit | lock     |
      | answers the PUT of record in the state app when it carries "lifecycle_status" with 409 GAIA_CO02, once | 1    | outcome=UNCONFIRMED code=ARCHIVE_UNCONFIRMED run_revision=null lock_released=true | exactly once | ACTIVE    | no    | released |

    @ext-02-lost-audit-response-recorded
    Examples: a lost audit response, the record under OP:<event_id> is this event's: recorded
      | fault                                                          | exit | result                                                                    | fired        | lifecycle | audit       | lock     |
      | loses the response of the POST of record in the audit app, once | 0    | outcome=ARCHIVED audit=RECORDED run_revision=current lock_released=true | exactly once | ARCHIVED  | exactly one | released |

    @ext-02-lock-release-fails
    Examples: the lock release refused: archived and audited, the lock left held
      | fault                                                                                  | exit | result                                                                     | fired         | lifecycle | audit       | lock                   |
      | answers the PUT of record in the state app when it carries "record_key" with 503, always | 1    | outcome=ARCHIVED audit=RECORDED run_revision=current lock_released=false | at least once | ARCHIVED  | exactly one | held under its event id |

  # kintone stops answering reads of the state app once the Run PUT has landed: barrier
  # "archived" holds kintone's 2xx answer to the Run PUT until fault "down" answers every
  # later read of the state app 503 (kintone's outage answer), so the fencing read before
  # the audit, a re-read of the Run and the read before the lock's release all fail, as
  # when the tenant goes down right after a write. (A proxy that blocks everything would
  # say the same, but the CLOSE then retries each read for the whole lease before giving
  # up: minutes per scenario for no more evidence.) The fencing check cannot prove the
  # lease, and the lock cannot be released (lock_released false: it stays RUNNING under
  # the event id until its lease runs out).
  @ext @acc-8f @ext-02-lease-lost-after-archive
  Scenario: a CLOSE whose lease cannot be proved after its Run PUT landed ends "LEASE_INTERRUPTED_AFTER_ARCHIVE"
    Given the network fixture "network-midfail.yaml"
    And FlowNet has run the network for the scope's business key as "failed run" and exited with code 1
    And the run is "FAILED"
    And the last NETWORK_LOCK record of the state app is noted
    And the kintone traffic of "close" goes through a fault proxy
    And barrier "archived" in the fault proxy of "close" holds the PUT of record in the state app after it succeeded when it carries "lifecycle_status"
    When the operator archives the run in the background as "close"
    And barrier "archived" is reached
    And fault "down" in the fault proxy of "close" answers the GET of records in the state app with 503, always
    And barrier "archived" is released
    Then "close" exits with code 1
    And "close" printed the archive result "outcome=ARCHIVED audit=PENDING code=LEASE_INTERRUPTED_AFTER_ARCHIVE run_revision=current lock_released=false"
    And fault "down" fired at least once
    And the run's lifecycle_status is "ARCHIVED"
    And the run has no RUN_ARCHIVED audit under the event id "close" printed
    And the network lock "close" took is held under its event id

  # The same outage, and kintone's answer to the Run PUT lost too (fault "f" drops it once the
  # barrier lets it go): the CLOSE must re-read the Run, which it cannot reach — whether the
  # Run is archived cannot be told (it is: the PUT landed), so the outcome is UNCONFIRMED,
  # never ARCHIVED or REJECTED.
  @ext @acc-8f @ext-02-run-unreadable-unconfirmed
  Scenario: a CLOSE whose Run PUT response is lost and whose Run cannot be re-read ends "UNCONFIRMED"
    Given the network fixture "network-midfail.yaml"
    And FlowNet has run the network for the scope's business key as "failed run" and exited with code 1
    And the run is "FAILED"
    And the last NETWORK_LOCK record of the state app is noted
    And the kintone traffic of "close" goes through a fault proxy
    And barrier "archived" in the fault proxy of "close" holds the PUT of record in the state app after it succeeded when it carries "lifecycle_status"
    And fault "f" in the fault proxy of "close" loses the response of the PUT of record in the state app when it carries "lifecycle_status", once
    When the operator archives the run in the background as "close"
    And barrier "archived" is reached
    And fault "down" in the fault proxy of "close" answers the GET of records in the state app with 503, always
    And barrier "archived" is released
    Then "close" exits with code 1
    And "close" printed the archive result "outcome=UNCONFIRMED code=ARCHIVE_UNCONFIRMED run_revision=null lock_released=false"
    And fault "f" fired exactly once
    And fault "down" fired at least once
    And the run's lifecycle_status is "ARCHIVED"
    And the run has no RUN_ARCHIVED audit under the event id "close" printed
    And the network lock "close" took is held under its event id

  # A lost audit response whose re-read finds a record under OP:<event_id> that is not this
  # event's: kintone inserts the CLOSE's audit (fault "f" loses only the answer), and the
  # re-read is answered, in kintone's stead, with the record another writer would have left
  # under the unique key — the same key, run and event, another previous_status (fault "g",
  # added while barrier "audit" holds the insert, once the event id is known from the lock
  # the CLOSE holds). The CLOSE cannot prove the audit is its own: AUDIT_CONFLICT.
  @ext @acc-8f @ext-02-lost-audit-response-conflict
  Scenario: a CLOSE whose lost audit response re-reads another event's record ends "AUDIT_CONFLICT"
    Given the network fixture "network-midfail.yaml"
    And FlowNet has run the network for the scope's business key as "failed run" and exited with code 1
    And the run is "FAILED"
    And the last NETWORK_LOCK record of the state app is noted
    And the kintone traffic of "close" goes through a fault proxy
    And barrier "audit" in the fault proxy of "close" holds the POST of record in the audit app before it is sent
    And fault "f" in the fault proxy of "close" loses the response of the POST of record in the audit app, once
    When the operator archives the run in the background as "close"
    And barrier "audit" is reached
    And fault "g" in the fault proxy of "close" answers the GET of records in the audit app with another event's RUN_ARCHIVED audit under the key of the event that holds the lock "close" took, once
    And barrier "audit" is released
    Then "close" exits with code 1
    And "close" printed the archive result "outcome=ARCHIVED audit=PENDING code=AUDIT_CONFLICT run_revision=current lock_released=true"
    And fault "f" fired exactly once
    And fault "g" fired exactly once
    And the run's lifecycle_status is "ARCHIVED"
    And the run has exactly one RUN_ARCHIVED audit under the event id "close" printed
    And the network lock "close" took is released
