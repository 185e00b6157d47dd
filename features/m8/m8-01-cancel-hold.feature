Feature: M8 cancel and hold — STOP at a node boundary, the hold blocks a resume, RELEASE never resumes

  scenarios.md §2.4.1. The long read's first read of 顧客管理 is held from before the run until
  the stop has been requested and shows in the status, so the STOP meets n1_longread running
  (and is honoured at the node boundary after it) on a tenant of any speed.

  @m8-01-cancel-hold @m8
  Scenario: the running node finishes, nothing after it starts, and only an explicit resume after the release runs the rest
    Given the network fixture "network-drill.yaml"
    And no kSQL-Flow process of this scope is alive
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "the drill run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    Then the status of the run shows activity "LIVE"
    When the operator requests a stop of the run as "the stop"
    Then "the stop" exits with code 0
    And the stdout of "the stop" has a line starting with "REQUESTED: "
    And the status of the run shows activity "STOPPED"
    When barrier "long read" is released
    Then "the drill run" exits with code 1
    And the node states are:
      | node           | status  | latest_attempt_no |
      | n1_longread    | SUCCESS | 1                 |
      | n2_independent | WAITING | 0                 |
      | n3_join        | WAITING | 0                 |
    And the last invocation is "CANCELLED" with result code "STOP_REQUESTED"
    And the status of the run shows no network lock and activity "STOPPED"
    Given the revisions of every state and audit record of the scope are noted
    When FlowNet resumes the run by its id as "the held resume"
    Then "the held resume" is refused with "RUN_ON_HOLD"
    And no state or audit record of the scope changed since the revisions were noted
    When the operator releases the hold of the run as "the release"
    Then "the release" exits with code 0
    And the stdout of "the release" has a line starting with "RELEASED: "
    And the status of the run shows activity "INTERRUPTED"
    And the run has 1 invocation and the last one is "CANCELLED"
    When FlowNet resumes the run by its id as "the resume"
    Then "the resume" exits with code 0
    And the run is "SUCCESS"
    And the node states are:
      | node           | status  |
      | n1_longread    | SUCCESS |
      | n2_independent | SUCCESS |
      | n3_join        | SUCCESS |
    And the status of the run by its run id shows it "SUCCESS" with no activity
