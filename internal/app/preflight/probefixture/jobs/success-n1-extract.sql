-- @ksql name: m5_shared_read
-- @ksql timeout: 300
-- @ksql dialect: 1
--
-- n1_extract of network-success: a read-only extract of 顧客管理 into a temp table, then a
-- sanity ASSERT. One read request against the customers app.
CREATE TEMP TABLE #extract_customers AS
  SELECT $id, 顧客コード, 従業員数 FROM LAPP_顧客管理;

ASSERT (SELECT COUNT(*) FROM #extract_customers) >= 0, 'n1_extract: customer count must be non-negative';
