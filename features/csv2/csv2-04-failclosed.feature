Feature: CSV2 fail-closed export — a failed job never leaves a half-written or replaced file

  Acceptance 15 and 16 (scenarios.md §2.9.1): a statement failing after the export keeps the
  old report.csv byte-identical and writes no fresh.csv; a value Shift_JIS cannot hold (U+301C)
  fails the Shift_JIS export with no report.csv; neither leaves a temporary file, and the Run
  is FAILED. Acceptance 14 is covered by kSQL-Flow's own tests (export_sinks, cli_contract).

  @csv2-04-failclosed @csv2 @acc-15 @acc-16
  Scenario: a failing statement and an unmappable Shift_JIS value leave the files as they were
    Given the network fixture "network-csv2-export.yaml" for the scope's CSV rows in "UTF8"
    And the working copy of the network gives node "export_csv" the output "fresh" at "csv2/{business_key}/{profile}/fresh.csv"
    And the working copy of the SQL of node "export_csv" has "-- __CSV2_AFTER_EXPORT__" replaced by "CREATE TEMP TABLE #fresh AS SELECT test_key FROM #report; ASSERT (SELECT COUNT(*) FROM #fresh) = 0, 'csv2-04: a statement fails after the export';"
    And the scope's CSV input holds 3 rows in UTF-8
    And the scope's finalize marker row is in the CSV fixture app
    And an old "report" file is in place
    When FlowNet runs the network for the scope's business key
    Then the FlowNet run exits with code 1
    And the run is "FAILED"
    And the latest attempt of node "export_csv" is "FAILED" with result code "ASSERT_FAILED"
    And the "report" file is byte-identical to the old one
    And there is no "fresh" file
    And no temporary file is left beside the "report" file
    Given the network fixture "network-csv2-export.yaml" for the scope's CSV rows in "UTF8" in a fresh sub-scope "sjis"
    And the scope's CSV input holds 3 rows in UTF-8, the first value starting with "〜"
    And the scope's finalize marker row is in the CSV fixture app
    When FlowNet has run the network for the scope's business key with the Shift_JIS export wrapper as "sjis run" and exited with code 1
    Then the run is "FAILED"
    And the latest attempt of node "export_csv" is "FAILED" with whatever result code kSQL-Flow gave
    And there is no "report" file
    And no temporary file is left beside the "report" file
