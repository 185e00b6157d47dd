Feature: ext CLOSE and STOP in the three-way order — ARCHIVED with a hold, RELEASE clears it, no resume

  P2-16 acceptance 8c, which the original left to unit tests: STOP reads a non-terminal Run →
  the Run becomes terminal → CLOSE sees no hold → STOP creates the hold → CLOSE writes
  ARCHIVED. A CLI STOP on a terminal Run is refused (RUN_ALREADY_TERMINAL), so the order needs
  the STOP held between its Run read and its hold write. Holds, where they start and end, why:
  - "long read" (the scope's kSQL-Flow proxy) holds n1_longfail's first read of 顧客管理 from
    the run's start until the STOP is held, so the STOP reads a RUNNING Run on a tenant of any
    speed; released, the node fails on its own and the Run ends FAILED (terminal).
  - "hold write" (the STOP's own fault proxy) holds the STOP's POST of its CANCEL_REQUEST
    record before it is sent: from after its Run read until the CLOSE is held at its ARCHIVED
    write, so the CLOSE's hold check finds no hold.
  - "archive write" (the CLOSE's own fault proxy) holds the CLOSE's PUT carrying
    lifecycle_status before it is sent: from after every check of the CLOSE until the STOP has
    written the hold and exited, so the ARCHIVED write lands on a Run that has a hold.
  The last Then proves the order from the three proxies' traffic logs and the barriers'
  release times (a request's effect lies between its departure and its response). Each hold
  lasts a run's remaining node (about 10 s at 500 ms per read), well inside FlowNet's HTTP
  timeout.

  @ext-8c-close-stop-order @ext @acc-8c
  Scenario: a STOP that read a running Run writes its hold after the CLOSE checked; the Run is ARCHIVED with the hold, RELEASE clears it, no resume
    Given the network fixture "network-p216-longfail.yaml"
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    And the kintone traffic of "longfail run" goes through a fault proxy
    And the kintone traffic of "stop" goes through a fault proxy
    And barrier "hold write" in the fault proxy of "stop" holds the POST of record in the state app before it is sent
    And the kintone traffic of "close" goes through a fault proxy
    And barrier "archive write" in the fault proxy of "close" holds the PUT of record in the state app before it is sent when it carries "lifecycle_status"
    When FlowNet runs the network for the scope's business key in the background as "longfail run"
    And node "n1_longfail" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And the operator requests a stop of the run in the background as "stop"
    And barrier "hold write" is reached
    And barrier "long read" is released
    Then "longfail run" exits with code 1
    And the run is "FAILED"
    When the operator archives the run in the background as "close"
    And barrier "archive write" is reached
    And barrier "hold write" is released
    Then "stop" exits with code 0
    And the stdout of "stop" has a line starting with "REQUESTED: CANCEL:"
    When barrier "archive write" is released
    Then "close" exits with code 0
    And "close" printed outcome "ARCHIVED" with audit "RECORDED" and lock_released true
    And the run's lifecycle_status is "ARCHIVED"
    And the run's hold record is "REQUESTED"
    And the fault proxies saw the three-way order: "stop" read the run before "longfail run" wrote it terminal, then "close" made its checks before barrier "hold write" let the hold write go, and the hold was written before barrier "archive write" let the ARCHIVED write go
    When the operator releases the hold of the run as "release"
    Then "release" exits with code 0
    And the run's hold record is "RELEASED"
    When FlowNet resumes the run by its id as "resume"
    Then "resume" exits with code 1
    And "resume" is refused with "RUN_NOT_RESUMABLE"
    And node "n1_longfail" has attempts numbered "1", all "FAILED"
