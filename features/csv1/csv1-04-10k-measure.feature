Feature: CSV1 10k measurement — 10,000 rows in UTF-8 and in Shift_JIS, with time and memory

  scenarios.md §2.8.4 (the original's 10k gate): 10,000 ASCII rows imported exactly in each
  encoding; the wall time of the run and the peak resident memory of the kSQL-Flow child
  (sampled with gopsutil every 10 ms) are recorded as evidence. No timed assertion: the
  targets (≤ 10 s, ≤ 64 MB on the sandbox) are benchmarks (`make bench`).

  @csv1-04-10k-measure @csv1 @acc-10k-gate
  Scenario: 10,000 rows are imported exactly in UTF-8 and in Shift_JIS, time and memory recorded
    Given the network fixture "network-csv1-import.yaml" for the scope's CSV rows in "UTF8"
    And the scope's CSV input holds 10000 rows in UTF-8
    When FlowNet runs the network for the scope's business key while the memory of its kSQL-Flow child is sampled
    Then the FlowNet run exits with code 0
    And the run is "SUCCESS"
    And the input audit summary of node "import_csv" records input "source" with the CSV input's sha256 and size, 10000 rows and encoding "utf8"
    And the CSV fixture app holds every row of the CSV input exactly once with its value
    And the wall time and the peak memory of the kSQL-Flow child were measured
    Given the network fixture "network-csv1-import.yaml" for the scope's CSV rows in "SJIS" in a fresh sub-scope "sjis"
    And the scope's CSV input holds 10000 rows in Shift_JIS
    When FlowNet runs the network for the scope's business key while the memory of its kSQL-Flow child is sampled
    Then the FlowNet run exits with code 0
    And the run is "SUCCESS"
    And the input audit summary of node "import_csv" records input "source" with the CSV input's sha256 and size, 10000 rows and encoding "sjis"
    And the CSV fixture app holds every row of the CSV input exactly once with its value
    And the wall time and the peak memory of the kSQL-Flow child were measured
