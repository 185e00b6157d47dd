Feature: ext job-unlock drill — a kSQL-Flow job lock recovered and recorded in FlowNet's audit trail

  Product-contract §1.7 end to end: after a kill leaves the node's kSQL-Flow job lock held,
  the operator inspects it (ksql-flow inspect-lock), recovers it (ksql-flow force-unlock-job)
  and records the recovery result with FlowNet's record-job-unlock. "long read" holds
  n1_customers' first read of 顧客管理 from the run's start until its kSQL-Flow child is
  killed, so the kill always comes after the JOB log start marker, on a tenant of any speed;
  the killed child needs no release. FlowNet itself survives and ends the run UNKNOWN.
  The recovery result handed to record-job-unlock for another node (n2_deals, whose job key
  is another job's) is refused JOB_KEY_MISMATCH with no write; the result for its own node
  is RECORDED with one JOB_LOCK_FORCE_UNLOCK_RECORDED audit. The JOB log rows of the run are
  noted after kSQL-Flow's own recovery wrote them and compared at the end: FlowNet never
  writes the JOB log.

  @ext-job-unlock-drill @ext
  Scenario: inspect-lock, force-unlock-job, then record-job-unlock: a foreign jobKey refused, the own one RECORDED, the JOB log untouched
    Given the network fixture "network-diamond.yaml" with node "n1_customers" running "job-longread.sql"
    And no kSQL-Flow process of this scope is alive
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background
    And node "n1_customers" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And the kSQL-Flow child of that attempt is killed
    And the job lock of node "n1_customers" is held by the killed attempt
    Then the FlowNet run exits with code 1
    And the run becomes "UNKNOWN"
    When the job lock of node "n1_customers" is recovered by a named confirmer with this scenario's record as evidence
    Then the job lock recovery released the lock the inspection saw
    Given the revisions of the run's JOB log rows are noted
    And the revisions of every state and audit record of the scope are noted
    When the operator records the job lock recovery of node "n1_customers" against node "n2_deals" with FlowNet as "the foreign record"
    Then "the foreign record" is refused with "JOB_KEY_MISMATCH"
    And no state or audit record of the scope changed since the revisions were noted
    When the operator records the job lock recovery of node "n1_customers" with FlowNet as "the record"
    Then "the record" exits with code 0
    And "the record" printed the RECORDED line of the job lock recovery
    And exactly one JOB_LOCK_FORCE_UNLOCK_RECORDED audit of the run records what "the record" was given
    And no JOB log row of the run changed since they were noted
