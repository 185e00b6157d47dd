Feature: EXT One Run per key at the INSERT — the R1 unique key decides, a lost response is adjudicated

  product-contract §1.3.1: the INSERT of the NETWORK_RUN record is the commit point of a new
  Run and its R1 unique key (record_key) the final arbiter of one Run per (profile, network,
  business key); §2.6: an insert's CB_VA01 or transport error is adjudicated by re-reading the
  record by record_key — ours is success, another writer's is DUPLICATE_RECORD. The article's
  fact table checked this only against the repository layer (m3-run-uniqueness: two
  createRun() at once, one success, the loser sees kintone's 400 CB_VA01 and reports
  DUPLICATE_RECORD).

  Why not two real run-networks released together: FlowNet takes the Network lock before it
  looks the Run up and inserts it (§1.3.1 steps 3–4), so two processes of one network never
  reach the INSERT at once while the lock works; the only way there is a lock lost under a
  live process, whose next fenced write then fails too. So each race is built in the one
  process whose side of it the contract decides, at the one request where it happens:

  - "insert loser": fault "key taken" in its fault proxy answers the POST of the record that
    carries "source_bundle_sha256" (only the NETWORK_RUN INSERT carries it, §4.1) with kintone's
    400 CB_VA01 naming record_key — what kintone answers the second of two INSERTs of one
    record_key (kintone-api.md: the errors name the unique field). Once; it
    ends with the process. The re-read by record_key finds no Run of ours, so the loser must
    report DUPLICATE_RECORD, exit 1, and leave no Run.
  - "insert lost": fault "lost insert" lets the same INSERT reach kintone and drops its
    response (kintone applied it; FlowNet cannot know). Once. The re-read finds the Run with
    FlowNet's own run_id, so it is ours: the run goes on, and exactly one Run exists.

  @ext-04-run-insert-loser @ext
  Scenario: the loser of the Run INSERT reports DUPLICATE_RECORD and creates no Run
    Given the network fixture "network-success.yaml"
    And the kintone traffic of "insert loser" goes through a fault proxy
    And fault "key taken" in the fault proxy of "insert loser" answers the POST of record in the state app when it carries "source_bundle_sha256" with 400 CB_VA01 naming "record_key" as a duplicate, once
    When FlowNet has run the network for the scope's business key as "insert loser" and exited with code 1
    Then "insert loser" is refused with "DUPLICATE_RECORD"
    And fault "key taken" fired exactly once
    And the traffic log of "insert loser" shows the request fault "key taken" took, answered 400
    And the scope's business key has no NETWORK_RUN record

  @ext-04-run-insert-lost-response @ext
  Scenario: a Run INSERT whose response is lost is adjudicated as ours; one Run, the run goes on
    Given the network fixture "network-success.yaml"
    And the kintone traffic of "insert lost" goes through a fault proxy
    And fault "lost insert" in the fault proxy of "insert lost" loses the response of the POST of record in the state app when it carries "source_bundle_sha256", once
    When FlowNet has run the network for the scope's business key as "insert lost" and exited with code 0
    Then fault "lost insert" fired exactly once
    And "insert lost" reported the run id of the run persisted for the business key
    And the run is "SUCCESS"
