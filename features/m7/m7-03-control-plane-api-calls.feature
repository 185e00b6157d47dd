Feature: M7 control-plane API calls — FlowNet's kintone calls per phase stay within a budget

  scenarios.md §2.3.3. Measure-only in the original: each phase (the run, a status read, a
  force-unlock of a lock that does not exist) is one FlowNet process whose kintone traffic
  passes its own fault proxy in pass mode, used purely as a call counter. The counts (records
  by method, file, other, heartbeat PUTs) are the evidence in the scenario record; the
  bounds are the original's: total above zero and at most 500 / 100 / 100, nothing blocked,
  the run uses records GET/POST/PUT and the file API, and heartbeats between 1 and 30.
  The budget is a run's of the original's length: its long read lasted about one heartbeat
  interval (10 s). The long read's first read of 顧客管理 is held until the run's proxy has
  passed a heartbeat 10 s or more after the lock was taken, so the run spans that interval on
  a tenant of any speed (and a FlowNet that heartbeats too often shows it all the same).

  @m7-03-control-plane-api-calls @m7
  Scenario: the run, a status read and a force-unlock of a missing lock stay within their call budgets
    Given the network fixture "network-m7-control-plane.yaml"
    And the kintone traffic of "the run" goes through a fault proxy
    And the kintone traffic of "the status" goes through a fault proxy
    And the kintone traffic of "the missing unlock" goes through a fault proxy
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    And FlowNet runs the network for the scope's business key in the background as "the run"
    And barrier "long read" is reached
    And barrier "long read" is released once the fault proxy of "the run" has passed a heartbeat 10 s or more after its first lease write
    And "the run" exits with code 0
    And the run is "SUCCESS"
    When the operator reads the status of the run as JSON as "the status"
    And the operator force-unlocks the network lock of a network that has none as "the missing unlock"
    Then "the status" exits with code 0
    And "the missing unlock" is refused with "LOCK_NOT_FOUND"
    And the kintone calls counted by the fault proxies are within:
      | process            | total  | blocked | records GET | records POST | records PUT | file | heartbeat |
      | the run            | 1..500 | 0       | 1..         | 1..          | 1..         | 1..  | 1..30     |
      | the status         | 1..100 | 0       | 1..         |              |             |      |           |
      | the missing unlock | 1..100 | 0       | 1..         |              |             |      |           |
