Feature: ext CLOSE of an UNKNOWN Run — refused, nothing written, the lock released

  §1.9's RUN_UNKNOWN_NOT_CLOSABLE, which the original left to unit tests because it needs a
  kill and a stale recovery in one scenario. Holds and waits, and why:
  - "long read" holds n1_longread's first read of 顧客管理 from the run's start until the
    whole FlowNet tree is killed, so the kill always finds the node RUNNING after its JOB log
    start marker, on a tenant of any speed; the killed child needs no release.
  - The dead owner's Network lock is then waited out (stale candidate: the drill network's
    10 s lease plus kintone's 60 s DATETIME allowance) and released the way an operator does,
    by force-unlock-network with the local_pid stop evidence; a resume adjudicates the node
    UNKNOWN (NO_EXECUTION_RESULT), so the Run is UNKNOWN.
  The CLOSE then takes the Network lock, reads the Run, refuses it and releases the lock (one
  new LOCKDONE: tombstone, SUCCESS), writing nothing to any state or audit record of the scope.

  @ext-unknown-close @ext
  Scenario: a killed node left UNKNOWN, its stale lock force-unlocked, then CLOSE is REJECTED with RUN_UNKNOWN_NOT_CLOSABLE
    Given the network fixture "network-drill.yaml"
    And no kSQL-Flow process of this scope is alive
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "the drill run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And the whole process tree of "the drill run" is killed, deepest first
    And the operator reads the status of the run as JSON as "the status after the kill"
    Then the job lock of node "n1_longread" is held by the killed attempt
    When the network lock of the run becomes a stale candidate
    And the operator force-unlocks the network lock of the run, confirming the stop by "local_pid", as "the unlock"
    Then "the unlock" exits with code 0
    When FlowNet resumes the run by its id as "the adjudication"
    Then "the adjudication" exits with code 1
    And the run is "UNKNOWN"
    And the latest attempt of node "n1_longread" is "UNKNOWN" with result code "NO_EXECUTION_RESULT" and the start time it had when FlowNet was killed
    Given the revisions of every state and audit record of the scope are noted
    And the last NETWORK_LOCK record of the state app is noted
    When the operator archives the run as "the CLOSE"
    Then "the CLOSE" exits with code 1
    And "the CLOSE" printed outcome "REJECTED" with code "RUN_UNKNOWN_NOT_CLOSABLE" and lock_released true
    And no state or audit record of the scope changed since the revisions were noted
    And exactly one NETWORK_LOCK record was added since it was noted: a LOCKDONE: tombstone without lock key, "SUCCESS"
    And the run's lifecycle_status is "ACTIVE"
    When the job lock of node "n1_longread" is recovered by a named confirmer with this scenario's record as evidence
    Then the job lock recovery released the lock the inspection saw
