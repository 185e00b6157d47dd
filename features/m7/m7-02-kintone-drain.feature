Feature: M7 kintone drain — FlowNet loses kintone mid-node and drains without corrupting anything

  scenarios.md §2.3.2 (product-contract §3.7 lease monitor and control-plane drain). The
  outage is FlowNet's alone: its kintone traffic passes its fault proxy; kSQL-Flow reaches
  kintone through a proxy of its own that never blocks, so its child finishes and writes its
  JOB log row while FlowNet is cut off. That proxy's barrier holds the long read (its first
  read of 顧客管理) until the outage has begun: the child finishes during the outage on a
  tenant of any speed.

  Recovery case: kintone comes back before the lease deadline. The recovery case runs the
  control-plane network (the original's 30 s lease / 10 s heartbeat, serial n1 -> n2 -> n3):
  the drill network's 10 s lease would expire before the ~10 s long read ends. The node's
  result is persisted after the outage, no other node starts, and the invocation closes
  CANCELLED / NETWORK_LEASE_INTERRUPTED (the lease became uncertain; one heartbeat confirmed
  the final write). The outage is lifted once the child has finished, FlowNet has retried at
  least three times and at most 6 s of the lease are left (the original: 26 s into its 30 s
  lease), counted from the last lease write that passed the proxy.

  Outage case: kintone never comes back while FlowNet lives. Every state and audit record of
  the scope (the run, its node states, attempts, invocation, its network lock and audits) is
  identical before and after FlowNet gives up; the invocation stays RUNNING. Then the
  outage ends and the operator cleans up: stale wait (the drill network's 10 s lease plus
  kintone's 60 s DATETIME allowance), force-unlock-network with the ids status gives, and
  --resume-run, whose orphan adjudication takes the child's JOB log result.

  @m7-02-kintone-drain @m7 @acc-5 @acc-26 @acc-28
  Scenario: an outage bridged before the lease deadline persists the node's result; an outage FlowNet does not survive writes nothing and is cleaned up
    Given the network fixture "network-m7-control-plane.yaml" as network "recover"
    And no kSQL-Flow process of this scope is alive
    And the kintone traffic of "the recovering run" goes through a fault proxy
    And barrier "recovering long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "the recovering run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "recovering long read" is reached
    And the fault proxy of "the recovering run" blocks everything
    And the fault proxy of "the recovering run" has dropped at least 1 request
    And barrier "recovering long read" is released
    And the kSQL-Flow child of that attempt finishes on its own and its JOB log row is "SUCCESS"
    And the fault proxy of "the recovering run" has dropped at least 3 requests
    And the fault proxy of "the recovering run" passes everything again when at most 6 s of the 30 s lease it last carried are left
    Then "the recovering run" exits with code 1
    And the latest attempt of node "n1_longread" is "SUCCESS" with result code "OK"
    And node "n2_deals" has no attempt
    And node "n3_join" has no attempt
    And the last invocation is "CANCELLED" with result code "NETWORK_LEASE_INTERRUPTED"
    And every attempt has exactly one JOB log row carrying its run, execution and job ids and status "SUCCESS"
    Given the network fixture "network-drill.yaml" as network "outage"
    And the kintone traffic of "the abandoned run" goes through a fault proxy
    And barrier "abandoned long read" holds the first read of the customers app by the scope's kSQL-Flow jobs
    When FlowNet runs the network for the scope's business key in the background as "the abandoned run"
    And node "n1_longread" has a RUNNING attempt with its JOB log start marker
    And barrier "abandoned long read" is reached
    And the fault proxy of "the abandoned run" blocks everything
    And the fault proxy of "the abandoned run" has dropped at least 1 request
    And the revisions of every state and audit record of the scope are noted
    And barrier "abandoned long read" is released
    And the kSQL-Flow child of that attempt finishes on its own and its JOB log row is "SUCCESS"
    Then "the abandoned run" exits with code 1
    And no write of "the abandoned run" reached its fault proxy after the 10 s lease it last carried ran out
    And no state or audit record of the scope changed since the revisions were noted
    And the last invocation is "RUNNING"
    When the fault proxy of "the abandoned run" passes everything
    And the network lock of the run becomes a stale candidate
    And the operator force-unlocks the network lock of the run, confirming the stop by "local_pid", as "the unlock"
    Then "the unlock" exits with code 0
    When FlowNet resumes the run by its id as "the adjudication"
    Then "the adjudication" exits with code 0
    And the run is "SUCCESS"
    And node "n1_longread" has attempts numbered "1", all "SUCCESS" with result code "OK"
    And the run has 2 invocations and the last one is "SUCCESS"
