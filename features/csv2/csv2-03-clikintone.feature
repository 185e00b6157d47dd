Feature: CSV2 cli-kintone — the file FlowNet exported is accepted by the real cli-kintone

  Acceptance 3 (scenarios.md §2.9.4): after an export run, the scope's rows are removed from
  the CSV fixture app and the real cli-kintone (@kintone/cli, pinned in tools/cli-kintone)
  imports the artefact, exactly as exported, with --update-key test_key; every row is back
  with its value and the app token never appears in cli-kintone's output. Without Node.js or
  the installed cli-kintone the scenario is blocked, never passed.

  @csv2-03-clikintone @csv2 @acc-3
  Scenario: cli-kintone record import takes the exported CSV
    Given the network fixture "network-csv2-export.yaml" for the scope's CSV rows in "UTF8"
    And the scope's CSV input holds 3 rows in UTF-8
    And the scope's finalize marker row is in the CSV fixture app
    When FlowNet runs the network for the scope's business key
    Then the FlowNet run exits with code 0
    And the run is "SUCCESS"
    And the output audit summary of node "export_csv" records sink "report" with 3 rows, encoding "utf8" and a size above 0
    And the sha256 of the exported "report" file is the one in the output audit summary of node "export_csv"
    Given the scope's rows are deleted from the CSV fixture app
    And the CSV fixture app holds no row of the scope
    When cli-kintone imports the exported "report" file into the CSV fixture app with --update-key test_key as "cli import"
    Then "cli import" exits with code 0
    And the output of "cli import" holds no API token
    And the CSV fixture app holds every row of the CSV input exactly once with its value
