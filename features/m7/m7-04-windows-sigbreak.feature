Feature: M7 graceful stop — the platform's stop signal mid-node leaves a safe graph

  scenarios.md §2.3.4. The original sent SIGBREAK (Ctrl-Break) on Windows only; flowtest
  keeps that on Windows (CTRL_BREAK to FlowNet's console process group) and sends SIGTERM to
  the FlowNet process alone elsewhere, so the scenario runs on every platform; the record
  notes which signal was sent and whether FlowNet drained gracefully (its attempt and
  invocation closed) or simply terminated (the original recorded simple-termination). Either
  way the graph must be safe: statuses in their allowed sets, finished_at on every terminal
  record, no RUNNING node state under a terminal run, no RUNNING attempt under a finished
  Invocation (one that closed without its attempt). What it left RUNNING is recovered by
  the operator: stale wait (the drill network's 10 s lease plus the 60 s DATETIME
  allowance), force-unlock-network, and --resume-run with orphan adjudication.
  The long read's first read of 顧客管理 is held until the stop signal has been sent, so the
  signal lands mid-node on a tenant of any speed; it is released right after, because a
  FlowNet that drains waits for its child and must not be kept from ending by the hold.

  @m7-04-windows-sigbreak @m7
  Scenario: the stop signal mid-node, a safe graph, and the operator recovers what was left RUNNING
    Given the network fixture "network-drill.yaml"
    And no kSQL-Flow process of this scope is alive
    And barrier "long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "the stopped run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "long read" is reached
    And the platform's stop signal is sent to "the stopped run"
    And barrier "long read" is released
    Then "the stopped run" ends within 60 s of the stop signal, drained or terminated
    And the kSQL-Flow child of that attempt finishes on its own and its JOB log row has a terminal status
    And the graph of the run is safe: statuses in their allowed sets, finished_at on every terminal record, no RUNNING node under a terminal run, no RUNNING attempt under a finished invocation
    When the network lock of the run becomes a stale candidate
    And the operator force-unlocks the network lock of the run, confirming the stop by "local_pid", as "the unlock"
    Then "the unlock" exits with code 0
    When FlowNet resumes the run by its id as "the adjudication"
    Then "the adjudication" exits with code 0
    And the run is "SUCCESS"
    And no attempt or invocation of the run is RUNNING
    And the graph of the run is safe: statuses in their allowed sets, finished_at on every terminal record, no RUNNING node under a terminal run, no RUNNING attempt under a finished invocation
