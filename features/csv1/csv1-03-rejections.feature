Feature: CSV1 rejections — a missing input, a link out of the IO root and a kSQL-Flow without importCsv

  scenarios.md §2.8.1: a missing input ends the attempt FAILED / INPUT_FILE_MISSING and a
  directory link leaving the IO root FAILED / INPUT_PATH_REJECTED, both before anything started
  (no start marker, no kSQL-Flow child); a kSQL-Flow whose capabilities lack importCsv is
  refused with CAPABILITY_FEATURE_MISSING before the Network lock, changing nothing.

  @csv1-03-rejections @csv1
  Scenario: each CSV input rejection is refused with its code and nothing starts
    Given the network fixture "network-csv1-import.yaml" for the scope's CSV rows in "UTF8"
    And the scope's IO root holds no CSV input
    When FlowNet runs the network for the scope's business key
    Then the FlowNet run exits with code 1
    And the run is "FAILED"
    And the latest attempt of node "import_csv" is "FAILED" with result code "INPUT_FILE_MISSING"
    And the latest attempt of node "import_csv" never started: no start marker and no runner start marker
    Given the scope's CSV input holds 3 rows in UTF-8
    And the revisions of every state and audit record of the scope are noted
    When FlowNet runs the network for the scope's business key with a kSQL-Flow whose capabilities lack importCsv as "legacy run"
    Then "legacy run" is refused with "CAPABILITY_FEATURE_MISSING" saying "importCsv"
    And no state or audit record of the scope changed since the revisions were noted
    Given the network fixture "network-csv1-import.yaml" for the scope's CSV rows in "UTF8" in a fresh sub-scope "link"
    And the scope's CSV input holds 3 rows in UTF-8 behind a directory link that leaves the IO root
    When FlowNet runs the network for the scope's business key
    Then the FlowNet run exits with code 1
    And the run is "FAILED"
    And the latest attempt of node "import_csv" is "FAILED" with result code "INPUT_PATH_REJECTED"
    And the latest attempt of node "import_csv" never started: no start marker and no runner start marker
    And the CSV fixture app holds no row of the scope
