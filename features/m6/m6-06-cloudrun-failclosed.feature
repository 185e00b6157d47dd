Feature: M6 Cloud Run stop confirmation fails closed — and makes no call outside the machine

  scenarios.md §2.2.6. Two copies of the drill network ("local", owned by a local pid, and
  "cloud", owned by a Cloud Run execution name) each lose their FlowNet while their long node
  runs; the orphaned kSQL-Flow finishes and the locks go stale. Every force-unlock-network
  call runs without a GCP access token and with a proxy that traps any connection to a host
  other than kintone. Permission, transport and execution-state cases are unit-test matter.
  Each long read is held (its first read of 顧客管理) until its FlowNet was killed, so both
  kills meet n1_longread running on a tenant of any speed; the second hold is declared once
  the first orphan has finished, before the cloud run.

  @m6-06-cloudrun-failclosed @m6
  Scenario: three stop confirmations are refused STOP_NOT_CONFIRMED without writing or calling out
    Given the network fixture "network-drill.yaml" as network "local"
    And no kSQL-Flow process of this scope is alive
    And barrier "local long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "the local run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "local long read" is reached
    And only the FlowNet process of "the local run" is killed, leaving its kSQL-Flow child running
    And barrier "local long read" is released
    Then the orphaned kSQL-Flow child of "the local run" finishes and its JOB log row is "SUCCESS"
    Given the network fixture "network-drill.yaml" as network "cloud"
    And barrier "cloud long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "the cloud run" with owner instance "projects/m6-test/locations/asia-northeast1/jobs/m6-job/executions/m6-execution"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "cloud long read" is reached
    And only the FlowNet process of "the cloud run" is killed, leaving its kSQL-Flow child running
    And barrier "cloud long read" is released
    Then the orphaned kSQL-Flow child of "the cloud run" finishes and its JOB log row is "SUCCESS"
    When the network lock of network "local" becomes a stale candidate
    And the network lock of network "cloud" becomes a stale candidate
    And the revisions of every state and audit record of the scope are noted
    And the operator force-unlocks the network lock of network "local", confirming the stop by "cloud_run_job_execution", as "a Cloud Run check of a local owner"
    And the operator force-unlocks the network lock of network "cloud", confirming the stop by "cloud_run_job_execution", as "a Cloud Run check without a token"
    And the operator force-unlocks the network lock of network "local", confirming the stop by "m6_unknown_method", as "an unknown method"
    Then "a Cloud Run check of a local owner" is refused with "STOP_NOT_CONFIRMED" saying "not a valid Cloud Run"
    And "a Cloud Run check without a token" is refused with "STOP_NOT_CONFIRMED" saying "GCP_ACCESS_TOKEN is not configured"
    And "an unknown method" is refused with "STOP_NOT_CONFIRMED" saying "unknown stop confirmation method"
    And no state or audit record of the scope changed since the revisions were noted
    And no force-unlock-network call of this scenario connected outside the machine
