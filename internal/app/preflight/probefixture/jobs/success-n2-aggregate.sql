-- @ksql name: m5_aggregate
-- @ksql timeout: 300
-- @ksql dialect: 1
--
-- n2_aggregate of network-success: COUNT and SUM over 案件管理 (one read request).
CREATE TEMP TABLE #deal_amounts AS
  SELECT $id, 売上 FROM LAPP_案件管理 WHERE 売上 >= 0;

ASSERT (SELECT COUNT(*) FROM #deal_amounts) >= 0, 'n2_aggregate: deal count must be non-negative';
ASSERT (SELECT SUM(売上) FROM #deal_amounts) >= 0, 'n2_aggregate: total sales must be non-negative';
