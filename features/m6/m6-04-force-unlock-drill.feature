Feature: M6 force-unlock drill — a dead owner's network lock is released only when it is safe

  scenarios.md §2.2.4. The original was Windows-only (a PowerShell walk of node.exe); flowtest
  kills the FlowNet tree deepest first through harness/proc on Linux and Windows and reads
  the process table to confirm it is gone. Holds and waits, and why:
  - The long read's first read of 顧客管理 is held by a barrier from the run's start until the
    tree is killed, so the kill always finds n1_longread running, on a tenant of any speed;
    the killed child needs no release.
  - The dead owner's Network lock then stays as the kill left it until the right-owner
    force-unlock. While its lease lives, the early unlock is refused (LEASE_STILL_ACTIVE).
    The wait for a stale candidate starts after that refusal and ends when status calls the
    lock stale: the drill network's lease is 10 s, so that is lease + kintone's 60 s DATETIME
    allowance, about 70 s after the kill's last heartbeat.
  - On the stale lock, before anything releases it: a wrong owner is refused
    (OWNER_MISMATCH), and a run-network of the same business key and an archive-run (CLOSE)
    of the run each meet the dead owner's RUNNING lock and get LOCK_CONFLICT. A stale lock is
    never taken over (product-contract §8 invariant 2, §3.7, §1.9): only force-unlock-network
    with stop evidence ends it. The revisions noted before the early unlock are compared
    record by record after every refusal, so the lock record is unchanged until that unlock.

  @m6-04-force-unlock-drill @m6
  Scenario: refused while the lease lives and for a wrong owner, released for the right one, then resolved and resumed
    Given the network fixture "network-drill.yaml"
    And no kSQL-Flow process of this scope is alive
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "the drill run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And the whole process tree of "the drill run" is killed, deepest first
    And the operator reads the status of the run as JSON as "the status after the kill"
    Then "the status after the kill" shows the network lock not stale, owned by the run's invocation, and names it for force-unlock-network
    And the job lock of node "n1_longread" is held by the killed attempt
    Given the revisions of every state and audit record of the scope are noted
    When the operator force-unlocks the network lock of the run, confirming the stop by "local_pid", as "the early unlock"
    Then "the early unlock" is refused with "LEASE_STILL_ACTIVE"
    And no state or audit record of the scope changed since the revisions were noted
    When the network lock of the run becomes a stale candidate
    And the operator force-unlocks the network lock of the run for a wrong owner as "the wrong-owner unlock"
    Then "the wrong-owner unlock" is refused with "OWNER_MISMATCH"
    And no state or audit record of the scope changed since the revisions were noted
    When FlowNet has run the network for the scope's business key as "the run over the stale lock" and exited with code 1
    Then "the run over the stale lock" is refused with "LOCK_CONFLICT"
    And no state or audit record of the scope changed since the revisions were noted
    When the operator archives the run as "the CLOSE over the stale lock"
    Then "the CLOSE over the stale lock" exits with code 1
    And "the CLOSE over the stale lock" printed outcome "REJECTED" with code "LOCK_CONFLICT" and lock_released true
    And no state or audit record of the scope changed since the revisions were noted
    When the operator force-unlocks the network lock of the run, confirming the stop by "local_pid", as "the unlock"
    Then "the unlock" exits with code 0
    And exactly one NETWORK_LOCK_FORCE_RELEASED audit of the network records what "the unlock" was given
    When FlowNet resumes the run by its id as "the adjudication"
    Then "the adjudication" exits with code 1
    And the latest attempt of node "n1_longread" is "UNKNOWN" with result code "NO_EXECUTION_RESULT" and the start time it had when FlowNet was killed
    And the node states are:
      | node           | status  | blocked_by  |
      | n1_longread    | UNKNOWN |             |
      | n2_independent | SUCCESS |             |
      | n3_join        | BLOCKED | n1_longread |
    When the operator reads the status of the run as JSON as "the status after the adjudication"
    Then "the status after the adjudication" names node "n1_longread" of the run for resolve-node and the run for --resume-run
    When the operator resolves node "n1_longread" to SUCCESS by manual completion as "the resolve"
    Then "the resolve" exits with code 0
    When FlowNet resumes the run by its id as "the final resume"
    Then "the final resume" exits with code 0
    And the run is "SUCCESS"
    When the job lock of node "n1_longread" is recovered by a named confirmer with this scenario's record as evidence
    Then the job lock recovery released the lock the inspection saw
