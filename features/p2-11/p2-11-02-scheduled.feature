Feature: P2-11 START with scheduled_for — a derived monthly key, as_of, and the business result

  Acceptance 2a/2b (scenarios.md §2.6.3). The scheduled network derives its business key
  `<network_id>@yyyy-MM` from scheduled_for in its time zone (Asia/Tokyo) and keeps
  scheduled_for as the Run's as_of, which kSQL-Flow gets and the JOB log records. Its node
  ASSERTs the count and 売上 sum of the month's deals; the expectations are computed here by
  reading 案件管理 itself. A correction START with its own key and the same instant runs the
  same month again as a second Run. An instant where Tokyo's calendar is already in the next
  month (2026-08-31T15:00Z is 2026-09-01 00:00 in Tokyo) derives September, not UTC's August.

  @p2-11-02-scheduled @p2-11 @acc-2a @acc-2b
  Scenario: a scheduled START runs the August aggregate under the derived key, then a correction key, then Tokyo's month at a boundary
    Given the request app holds no REQUESTED or ACCEPTED request
    And the deal count and 売上 sum of 案件管理 for 受注予定日 in 2026-08 are read from 案件管理 itself
    And the network fixture "network-p211-scheduled.yaml" as network "scheduled"
    And the working copy of the SQL of node "n1_period_aggregate" gets those expectations
    And network "scheduled" may be started from the request app
    When a START request for network "scheduled" with scheduled_for "2026-08-15T00:00:00.000Z" is created as "regular"
    And the poller runs as "poller 1"
    Then exactly one run exists for the business key "{network_id}@2026-08", of this network
    And the run's as_of is "2026-08-15T00:00:00Z"
    And request "regular" is "DONE" with result code "OK"
    And the run is "SUCCESS"
    And every attempt of the run is "SUCCESS" with a read count of at least 0 and a written count of 0
    And every attempt has exactly one JOB log row carrying its run, execution and job ids and status "SUCCESS"
    And the JOB log row of every attempt of the run has as_of "2026-08-15T00:00:00Z"
    When a START request for network "scheduled" is created with:
      | name          | correction                        |
      | business_key  | {network_id}@2026-08-correction-1 |
      | scheduled_for | 2026-08-15T00:00:00.000Z          |
    And the poller runs as "poller 2"
    Then exactly one run exists for the business key "{network_id}@2026-08-correction-1", of this network
    And the run's as_of is "2026-08-15T00:00:00Z"
    And request "correction" is "DONE" with result code "OK"
    And the run is "SUCCESS"
    And every attempt of the run is "SUCCESS" with a read count of at least 0 and a written count of 0
    And every attempt has exactly one JOB log row carrying its run, execution and job ids and status "SUCCESS"
    And the JOB log row of every attempt of the run has as_of "2026-08-15T00:00:00Z"
    Given the deal count and 売上 sum of 案件管理 for 受注予定日 in 2026-09 are read from 案件管理 itself
    And the network fixture "network-p211-scheduled.yaml" as network "month boundary"
    And the working copy of the SQL of node "n1_period_aggregate" gets those expectations
    And network "month boundary" may be started from the request app
    When a START request for network "month boundary" with scheduled_for "2026-08-31T15:00:00.000Z" is created as "month boundary"
    And the poller runs as "poller 3"
    Then exactly one run exists for the business key "{network_id}@2026-09", of this network
    And the run's as_of is "2026-08-31T15:00:00Z"
    And request "month boundary" is "DONE" with result code "OK"
    And the run is "SUCCESS"
    And the JOB log row of every attempt of the run has as_of "2026-08-31T15:00:00Z"
