Feature: CSV2 round trip — export, import the bytes back, rerun the export: the same sha256

  Acceptance 1 and 17 (scenarios.md §2.9.3), in UTF-8 and in Shift_JIS: a first export run
  without the finalize marker ends FAILED with the export attempt SUCCESS and its receipt;
  the artefact's bytes, copied unchanged into a CSV1 import case, import BY NAME; with the
  marker in place, --rerun-from the export node succeeds as RERUN_FROM and its new receipt and
  artefact have the first export's sha256.

  The cells carry Japanese text (issue 34): kanji, full- and half-width kana, the characters
  where CP932 parts from other Japanese encodings (～ － ∥ ￠ ￡ ￢, and the NEC extensions ① ㈱).
  Strict decoding cannot tell CP932 from an encoding whose codes decode to the same text (CP932
  itself holds ￢ and ㈱ twice), so the Shift_JIS export is also compared byte for byte with the
  expected CSV encoded by the distribution's iconv (-t CP932), an encoder the sandbox does not
  use; the Shift_JIS import back then reads exactly those bytes.

  @csv2-02-roundtrip @csv2 @acc-1 @acc-17
  Scenario: UTF-8 and Shift_JIS exports import back and re-export identically
    Given the network fixture "network-csv2-export.yaml" for the scope's CSV rows in "UTF8" as network "export"
    And the scope's CSV input holds 3 rows of Japanese text in UTF-8
    And FlowNet has run the network for the scope's business key as "first export" and exited with code 1
    Then the run is "FAILED"
    And the latest attempt of node "export_csv" is "SUCCESS" with result code "OK"
    And the latest attempt of node "finalize_gate" is "FAILED" with result code "ASSERT_FAILED"
    And the output audit summary of node "export_csv" records sink "report" with 3 rows, encoding "utf8" and a size above 0
    And the exported "report" file decodes strictly as "utf8" and is the CSV input's rows as CRLF CSV
    And the sha256 of the exported "report" file is the one in the output audit summary of node "export_csv"
    Given the network fixture "network-csv1-import.yaml" for the scope's CSV rows in "UTF8" as network "import back"
    And the exported "report" file is copied unchanged to the CSV input of the current network
    And FlowNet has run the network for the scope's business key as "import back" and exited with code 0
    Then the input audit summary of node "import_csv" records input "source" with the CSV input's sha256 and size, 3 rows and encoding "utf8"
    And the CSV fixture app holds every row of the CSV input exactly once with its value
    Given the scenario turns to network "export"
    And the scope's finalize marker row is in the CSV fixture app
    When FlowNet reruns the run from node "export_csv" by its id as "rerun"
    Then "rerun" exits with code 0
    And the last invocation has mode "RERUN_FROM"
    And the output audit summary of node "export_csv" records sink "report" with 3 rows, encoding "utf8" and a size above 0
    And the exported "report" file and its receipt have the sha256 of the first export
    Given the network fixture "network-csv2-export.yaml" for the scope's CSV rows in "UTF8" in a fresh sub-scope "sjis" as network "sjis export"
    And the scope's CSV input holds 3 rows of Japanese text in UTF-8
    And FlowNet has run the network for the scope's business key with the Shift_JIS export wrapper as "first sjis export" and exited with code 1
    Then the run is "FAILED"
    And the latest attempt of node "export_csv" is "SUCCESS" with result code "OK"
    And the output audit summary of node "export_csv" records sink "report" with 3 rows, encoding "sjis" and a size above 0
    And the exported "report" file decodes strictly as "sjis" and is the CSV input's rows as CRLF CSV
    And the exported "report" file is, byte for byte, the CSV input's rows as CRLF CSV encoded by iconv's CP932
    And the sha256 of the exported "report" file is the one in the output audit summary of node "export_csv"
    Given the network fixture "network-csv1-import.yaml" for the scope's CSV rows in "SJIS" as network "sjis import back"
    And the exported "report" file is copied unchanged to the CSV input of the current network
    And FlowNet has run the network for the scope's business key as "sjis import back" and exited with code 0
    Then the input audit summary of node "import_csv" records input "source" with the CSV input's sha256 and size, 3 rows and encoding "sjis"
    And the CSV fixture app holds every row of the CSV input exactly once with its value
    Given the scenario turns to network "sjis export"
    And the scope's finalize marker row is in the CSV fixture app
    When FlowNet reruns the run from node "export_csv" by its id with the Shift_JIS export wrapper as "sjis rerun"
    Then "sjis rerun" exits with code 0
    And the last invocation has mode "RERUN_FROM"
    And the output audit summary of node "export_csv" records sink "report" with 3 rows, encoding "sjis" and a size above 0
    And the exported "report" file and its receipt have the sha256 of the first export
