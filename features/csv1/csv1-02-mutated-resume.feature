Feature: CSV1 mutated resume — a partial import resumes exactly once; a changed input is refused

  scenarios.md §2.8.3: the kSQL-Flow child's 2nd records write to the CSV fixture app answers a
  synthetic HTTP 400 (CSV1_FAULT): 250 rows import partially and the Run is FAILED. A resume
  with the same file completes all 250 rows exactly once in a second attempt and invocation.
  In a second case the input is rewritten with one changed value after the partial import (the
  partial attempt's recorded baseline still names the original file): the resume is refused with INPUT_FILE_MUTATED before any invocation, and neither the scope's
  records nor the fixture app's rows change.

  @csv1-02-mutated-resume @csv1
  Scenario: the same input resumes to exactly-once rows, a mutated input is refused
    Given the network fixture "network-csv1-import.yaml" for the scope's CSV rows in "UTF8"
    And the kSQL-Flow child's kintone traffic goes through a proxy that answers its 2nd records write to the CSV fixture app with HTTP 400 once
    And the scope's CSV input holds 250 rows in UTF-8
    When FlowNet runs the network for the scope's business key
    Then the FlowNet run exits with code 1
    And the run is "FAILED"
    And the write-fault proxy answered 1 synthetic HTTP 400
    And the latest attempt of node "import_csv" is "FAILED" with result code "ASSERT_FAILED"
    And the CSV fixture app holds some but not all rows of the CSV input, and their count is noted
    When FlowNet resumes the run by its id as "resume"
    Then "resume" exits with code 0
    And the run is "SUCCESS"
    And the run has 2 invocations and the last one is "SUCCESS"
    And the latest attempt of node "import_csv" is "SUCCESS" with result code "OK"
    And the input audit summary of node "import_csv" records input "source" with the CSV input's sha256 and size, 250 rows and encoding "utf8"
    And the CSV fixture app holds every row of the CSV input exactly once with its value
    Given the network fixture "network-csv1-import.yaml" for the scope's CSV rows in "UTF8" in a fresh sub-scope "mutated"
    And the kSQL-Flow child's kintone traffic goes through a proxy that answers its 2nd records write to the CSV fixture app with HTTP 400 once
    And the scope's CSV input holds 250 rows in UTF-8
    And FlowNet has run the network for the scope's business key as "partial" and exited with code 1
    And the CSV fixture app holds some but not all rows of the CSV input, and their count is noted
    And the CSV input is rewritten with one value changed
    And the input baseline of node "import_csv" records input "source" as the CSV input was before the rewrite
    And the revisions of every state and audit record of the scope are noted
    When FlowNet resumes the run by its id as "mutated resume"
    Then "mutated resume" is refused with "INPUT_FILE_MUTATED"
    And no state or audit record of the scope changed since the revisions were noted
    And the run has 1 invocation and the last one is "FAILED"
    And the CSV fixture app still holds the noted count of rows of the scope
