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
      the one retry archives it; twice: the retry is lost too and the CLOSE cannot confirm;
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
    Examples: the retry lost too, the Run re-read ACTIVE again: unconfirmed
      | fault                                                                                  | exit | result                                                                               | fired         | lifecycle | audit | lock     |
      | resets the PUT of record in the state app when it carries "lifecycle_status", 2 times | 1    | outcome=UNCONFIRMED code=ARCHIVE_UNCONFIRMED run_revision=null lock_released=true | exactly 2 times | ACTIVE    | no    | released |

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
