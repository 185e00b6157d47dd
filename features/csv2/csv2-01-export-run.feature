Feature: CSV2 export run — four nodes, receipts, an exact CRLF artefact and no leak in the audits

  scenarios.md §2.9.2: the seed input is imported, gated, exported as the output sink
  "report" and finalised. The import attempt carries the KSQL_FLOWNET_INPUT_AUDIT summary, the
  export attempt the KSQL_FLOWNET_OUTPUT_AUDIT receipt (sink, sha256, rows, bytes, encoding);
  the artefact decodes strictly, is exactly the expected CRLF CSV and has the receipt's
  sha256; no state or audit record holds a path of the IO root or a cell value. The cells carry
  Japanese text (issue 34), so the export's UTF-8 is checked on more than ASCII.

  @csv2-01-export-run @csv2
  Scenario: the export node writes the expected CSV and its receipt matches the artefact
    Given the network fixture "network-csv2-export.yaml" for the scope's CSV rows in "UTF8"
    And the scope's CSV input holds 3 rows of Japanese text in UTF-8
    And the scope's finalize marker row is in the CSV fixture app
    When FlowNet runs the network for the scope's business key
    Then the FlowNet run exits with code 0
    And the run is "SUCCESS"
    And every node has exactly 1 attempt and it is "SUCCESS"
    And the input audit summary of node "import_csv" records input "source" with the CSV input's sha256 and size, 3 rows and encoding "utf8"
    And the output audit summary of node "export_csv" records sink "report" with 3 rows, encoding "utf8" and a size above 0
    And the exported "report" file decodes strictly as "utf8" and is the CSV input's rows as CRLF CSV
    And the sha256 of the exported "report" file is the one in the output audit summary of node "export_csv"
    And the CSV fixture app holds every row of the CSV input exactly once with its value
    And no state or audit record of the run holds a path of the IO root or a cell value of the CSV input
