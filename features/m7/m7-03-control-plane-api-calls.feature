Feature: M7 control-plane API calls — FlowNet's kintone calls per phase stay within a budget derived from the contract

  scenarios.md §2.3.3. Each phase (the run, a status read, a force-unlock of a lock that does
  not exist) is one FlowNet process whose kintone traffic passes its own fault proxy in pass
  mode, used purely as a call counter; the counts are the evidence in the scenario record.
  The long read's first read of 顧客管理 is held until the run's proxy has passed a heartbeat
  10 s or more after the lock was taken, so the run spans a heartbeat interval on a tenant of
  any speed.

  With the reference FlowNet the bounds bind (the original's 500 / 100 / 100 were ten times a
  run): a regression budget of our model. With a real FlowNet (a live target, or the real
  product on the sandbox) the original's bounds apply (scenarios.md §2.3.3): it may spend its
  calls otherwise within the contract (FlowNet 1.0.0 on the sandbox: 86 calls, 46 GET).
  Each sandbox bound is the
  count the contract's steps make for this fixture, times at most 1.5 (rounded down), so a
  FlowNet that polls the hold record a few times a second, or reads a record twice per write,
  fails. The lease monitor's ticks are taken out of the fixed counts ("less heartbeats": each
  tick is one fence read and one PUT, §3.7) because how many ticks a run has depends on how
  long it runs, i.e. on the tenant's speed; the ticks are bounded by the contract's lease
  monitor instead (§3.7: "heartbeat every heartbeat_interval_sec and also before each ordinary
  write"): at most one per heartbeat_interval_sec (10 s) of the lease, plus one, and one
  before each of the run's other record writes (the real FlowNet 1.0.0 ticks before the Run
  starts, before each node and before each aggregate write: 8 for this fixture, plus its
  timer's). And the lease never runs out while the run lives: no 30 s pass between two lease
  writes, or after the last one.
  The run (NEW, three serial nodes, product-contract §1.3, §3.7):
    - admission: lock POST; Run lookup by R1 key and the max_active_runs read (2 GET); source
      bundle upload and its verification (file POST + GET); Run and Invocation POST; Run
      re-read, Node State read and Attempt read (3 GET); three Node State POSTs;
    - per node (×3): Run aggregate read and hold read before it (§1.3.2, 2 GET); Attempt POST;
      Node State RUNNING, Attempt execution_started_at (2 PUT); JOB-log marker read (1 GET);
      Attempt and Node State terminal (2 PUT);
    - Run RUNNING on the first start and Run terminal (2 PUT);
    - close: a read and the Invocation's final PUT; the lock's fence read and release PUT.
    Sum 43 = records GET 16 (5 + 3×3 + 2), POST 9 (lock, Run, Invocation, 3 Node States,
    3 Attempts), PUT 16 (3×4 + 2 Run + Invocation + release), file 2. Bounds ×1.5: 64, 24, 13,
    24, 3.
  The status read (§1.4, read-only): Run, Node States, hold, lock (state app) and Invocations,
  Attempts (audit app): 6 GET, no write; bound 9. The force-unlock of a missing lock (§1.5):
  one lock read, then LOCK_NOT_FOUND, no write; bound 2 (×2, the least step above 1).

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
    And "the run" sent at most one heartbeat per 10 s of its lease, plus one, and one before each of its other record writes
    And the 30 s lease of "the run" never ran out while it ran
    And with the reference FlowNet, the kintone calls counted by the fault proxies are within:
      | process            | calls less heartbeats | blocked | records GET less fences | records POST | records PUT less heartbeats | file | heartbeat |
      | the run            | 1..64                 | 0       | 1..24                   | 1..13        | 1..24                       | 1..3 |           |
      | the status         | 1..9                  | 0       | 1..9                    | 0            | 0                           | 0    | 0         |
      | the missing unlock | 1..2                  | 0       | 1..2                    | 0            | 0                           | 0    | 0         |
    And with a real FlowNet, the kintone calls counted by the fault proxies are within:
      | process            | total  | blocked | records GET | records POST | records PUT | file | heartbeat |
      | the run            | 1..500 | 0       | 1..         | 1..          | 1..         | 1..  | 1..30     |
      | the status         | 1..100 | 0       | 1..         |              |             |      |           |
      | the missing unlock | 1..100 | 0       | 1..         |              |             |      |           |
