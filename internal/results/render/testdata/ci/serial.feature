Feature: serial runs

  Background:
    Given a sandbox

  @m5-01 @m5 @acc-5
  Scenario: one run succeeds
    When the network runs
    Then the run is "SUCCEEDED"

  @m5-02 @m5 @acc-5
  Scenario: a node fails
    When the network runs
    Then the run is "FAILED"

  @m5
  Scenario Outline: a wait of <n> seconds
    Given a wait of <n> seconds

    @m5-03
    Examples: short
      | n |
      | 1 |

    @m5-04
    Examples: long
      | n  |
      | 90 |

  @m5-09 @m5
  Scenario: left out by the tag
    Then nothing happens
