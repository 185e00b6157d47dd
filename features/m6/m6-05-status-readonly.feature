Feature: M6 status is read-only — it writes nothing, hides the lease token, names the recovery commands

  scenarios.md §2.2.5. The drill is rendered as a second network of the scenario ("stale",
  network id <scope>_m6_drill_stale) and run under the scope's business key like the first
  (the original gave it the key <scope>_stale instead). The drill's long read is held (its
  first read of 顧客管理) from before its run until its FlowNet parent was killed, so the live
  status and the kill meet n1_longread running on a tenant of any speed. The nonidem run reads
  顧客管理 too, so the scope's kSQL-Flow proxy is put in place first and the hold is declared
  only before the drill run.

  @m6-05-status-readonly @m6
  Scenario: status changes no revision, shows what to resume and resolve, and sees a dead owner's lock go stale
    Given the network fixture "network-nonidem.yaml"
    And the kintone traffic of the scope's kSQL-Flow jobs goes through a proxy
    And FlowNet has run the network for the scope's business key as "the nonidem run" and exited with code 1
    And the revisions of every state and audit record of the scope are noted
    When the operator reads the status of the run as text as "the text status"
    And the operator reads the status of the run as JSON as "the JSON status"
    Then no state or audit record of the scope changed since the revisions were noted
    And "the text status" names the network and the run
    And "the JSON status" holds no lease token
    And "the JSON status" names node "n2_nonidem" of the run for resolve-node and the run for --resume-run
    Given the network fixture "network-drill.yaml" as network "stale"
    And no kSQL-Flow process of this scope is alive
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "the drill run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And the operator reads the status of the run as JSON as "the live status"
    Then "the live status" shows the network lock not stale, owned by the run's invocation, and names it for force-unlock-network
    And "the live status" holds no lease token
    When only the FlowNet process of "the drill run" is killed, leaving its kSQL-Flow child running
    And barrier "long read" is released
    Then the orphaned kSQL-Flow child of "the drill run" finishes and its JOB log row has a terminal status
    And the network lock of the run becomes a stale candidate
