Feature: P2-11 regressions — a stale START, RERUN without app_start, the cron path

  Acceptance 6/8 (scenarios.md §2.6.5). A START claimed by a poller that died is rejected as
  STALE and nothing runs; a person's new START of the same key is then a NOOP. app_start:
  false only stops STARTs: a RERUN still works. The cron path (`run-network --scheduled-for
  … --resume --json`) derives the monthly key and keeps the instant as as_of.

  @p2-11-05-stale-regression @p2-11 @acc-6 @acc-8
  Scenario: stale START rejected without running, re-START a NOOP, RERUN on an app_start false network, the cron path
    Given the request app holds no REQUESTED or ACCEPTED request
    And the network fixture "network-p211-explicit.yaml" as network "stale"
    And network "stale" may be started from the request app
    And the network fixture "network-p211-explicit.yaml" as network "rerun"
    And the deal count and 売上 sum of 案件管理 for 受注予定日 in 2026-09 are read from 案件管理 itself
    And the network fixture "network-p211-scheduled.yaml" as network "cron"
    And the working copy of the SQL of node "n1_period_aggregate" gets those expectations
    And the scenario turns to network "stale"
    And FlowNet has run the network for the scope's business key as "stale run" and exited with code 0
    And the revisions of every state and audit record of the scope are noted
    When an ACCEPTED START request for network "stale" with business key "{scope}", claimed 10 minutes ago by a dead poller, is inserted as "stale start"
    And the poller runs with heartbeat 500 ms and stale-after 1000 ms as "recovery poller"
    Then "recovery poller" counted claimed=0 stale=1
    And request "stale start" is "REJECTED" with result code "STALE" and a message containing "do not request another operation"
    And no state or audit record of the scope changed since the revisions were noted
    When a START request for network "stale" with business key "{scope}" is created as "human restart"
    And the poller runs as "poller 2"
    Then request "human restart" is "DONE" with result code "NOOP_ALREADY_SUCCESS"
    Given the scenario turns to network "rerun"
    And FlowNet has run the network for the scope's business key with an invalid customers token as "rerun first" and exited with code 1
    When a RERUN request for the run is created as "rerun"
    And the poller runs as "poller 3"
    Then request "rerun" is "DONE" with result code "OK"
    And the run is "SUCCESS"
    And the run has 2 invocations and the last one is "SUCCESS"
    Given the scenario turns to network "cron"
    When FlowNet runs the network the cron way, --scheduled-for "2026-09-15T00:00:00.000Z" --resume --json, as "cron"
    Then "cron" exits with code 0
    And exactly one run exists for the business key "{network_id}@2026-09", of this network
    And the run is "SUCCESS"
    And "cron" printed one JSON line: outcome "NEW", the run, its last invocation, aggregate "SUCCESS" and result code "OK"
    And the run's as_of is "2026-09-15T00:00:00Z"
    And the JOB log row of every attempt of the run has as_of "2026-09-15T00:00:00Z"
