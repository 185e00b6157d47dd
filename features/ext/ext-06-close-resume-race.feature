Feature: ext CLOSE against a resume of the run in a free race — the Network lock decides either way

  The free-race sibling of p2-16-05 (acceptance 8b, scenarios.md §2.7.5): the same FAILED Run,
  then a resume by its id and an archive-run started together, with no barrier: whichever
  takes the Network lock first wins, and each order has its own correct outcome
  (product-contract §1.3.1, §1.9, §8 invariant 2). The last step compares everything both
  processes printed and the Run's records with each order's expectation and names the one that
  held; `flowtest explore ext-06-close-resume-race` orders the two processes' kintone writes
  and checks, in every order, that no attempt of the Run was created after it was ARCHIVED.
  Under `flowtest run` the timing decides the order (on the sandbox the archive, which checks
  no kSQL-Flow capabilities, usually takes the lock first).

  @ext-06-close-resume-race @ext @acc-8b
  Scenario: archive-run and a resume of the same FAILED Run race for the Network lock; the winner decides, no attempt after ARCHIVED
    Given the network fixture "network-p216-longfail.yaml"
    And the kintone traffic of the scope's kSQL-Flow jobs goes through a proxy
    And FlowNet has run the network for the scope's business key with an invalid customers token as "first run" and exited with code 1
    And the run is "FAILED"
    When FlowNet resumes the run by its id in the background as "resumed run"
    And the operator archives the run in the background as "archive"
    Then "resumed run" exits with code 1
    And the archive "archive" and the resume "resumed run" settled in one of the orders the Network lock allows, judged on node "n1_longfail"
