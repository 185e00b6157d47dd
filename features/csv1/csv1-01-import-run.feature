Feature: CSV1 import run — three UTF-8 rows of Japanese text imported once each, audited without paths or cells

  scenarios.md §2.8.2: a node with the CSV input "source" imports 3 UTF-8 rows into the CSV
  fixture app (IMPORT INTO … ON DUPLICATE (test_key) … ON ERROR SKIP INTO #err). The attempt's
  error_message is the KSQL_FLOWNET_INPUT_AUDIT v1 summary with the input's baseline sha256;
  no state or audit record of the run holds the input's absolute path or a cell value. The values
  carry Japanese text (kanji, full- and half-width kana, CP932's ～ － ∥ ￠ ￡ ￢ and ① ㈱; issue 34),
  so an importer that mangles non-ASCII cells fails the app read.

  @csv1-01-import-run @csv1
  Scenario: three UTF-8 rows are imported exactly once and the input is audited by digest only
    Given the network fixture "network-csv1-import.yaml" for the scope's CSV rows in "UTF8"
    And the scope's CSV input holds 3 rows of Japanese text in UTF-8
    When FlowNet runs the network for the scope's business key
    Then the FlowNet run exits with code 0
    And exactly one run exists for the business key
    And the run is "SUCCESS"
    And every node has exactly 1 attempt and it is "SUCCESS"
    And the latest attempt of node "import_csv" is "SUCCESS" with result code "OK"
    And the input audit summary of node "import_csv" records input "source" with the CSV input's sha256 and size, 3 rows and encoding "utf8"
    And the CSV fixture app holds every row of the CSV input exactly once with its value
    And no state or audit record of the run holds a path of the IO root or a cell value of the CSV input
