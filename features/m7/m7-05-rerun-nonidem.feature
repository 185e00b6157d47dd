Feature: M7 rerun-from and non-idempotent descendants — allowed while they never ran, refused once they did

  scenarios.md §2.3.5 (product-contract §1.3.1 RERUN_FROM_NON_IDEMPOTENT). --rerun-from re-runs
  a node and all its descendants. A non-idempotent descendant that was never attempted
  (latest_attempt_no 0) does not stop it: it stays BLOCKED behind the node that fails again.
  Once a non-idempotent node has run, a rerun-from that selects it is refused and writes
  nothing.

  @m7-05-rerun-nonidem @m7
  Scenario: rerun-from passes over a never-run non-idempotent descendant and is refused over an executed one
    Given the network fixture "network-rerun-nonidem.yaml" as network "unexecuted"
    And FlowNet has run the network for the scope's business key as "the first run" and exited with code 1
    And the run is "FAILED"
    And the node states are:
      | node         | status  | latest_attempt_no |
      | n1_extract   | SUCCESS | 1                 |
      | n2_aggregate | FAILED  | 1                 |
      | n3_notify    | BLOCKED | 0                 |
    And node "n3_notify" has no attempt
    When FlowNet reruns the run from node "n2_aggregate" by its id as "the rerun over the unexecuted node"
    Then "the rerun over the unexecuted node" exits with code 1
    And the stderr of "the rerun over the unexecuted node" does not mention "RERUN_FROM_NON_IDEMPOTENT"
    And the stdout of "the rerun over the unexecuted node" has a line starting with "RESUME: "
    And "the rerun over the unexecuted node" reported the run id that "the first run" reported, the run persisted for the business key
    And node "n2_aggregate" has attempts numbered "1,2", all "FAILED" with result code "ASSERT_FAILED"
    And node "n3_notify" has no attempt
    And the node states are:
      | node         | status  | latest_attempt_no | blocked_by   |
      | n1_extract   | SUCCESS | 1                 |              |
      | n2_aggregate | FAILED  | 2                 |              |
      | n3_notify    | BLOCKED | 0                 | n2_aggregate |
    And the last invocation has mode "RERUN_FROM"
    Given the network fixture "network-rerun-nonidem2.yaml" as network "executed"
    And FlowNet has run the network for the scope's business key as "the executed run" and exited with code 1
    And the node states are:
      | node       | status  | latest_attempt_no |
      | n1_extract | SUCCESS | 1                 |
      | n3_notify  | SUCCESS | 1                 |
      | n4_fail    | FAILED  | 1                 |
    And the revisions of every state and audit record of the scope are noted
    When FlowNet reruns the run from node "n3_notify" by its id as "the rerun over the executed node"
    Then "the rerun over the executed node" is refused with "RERUN_FROM_NON_IDEMPOTENT" saying "executed idempotent=false"
    And "the rerun over the executed node" exits with code 1
    And no state or audit record of the scope changed since the revisions were noted
    And node "n3_notify" has attempts numbered "1", all "SUCCESS"
    And the run has 1 invocation and the last one is "FAILED"
