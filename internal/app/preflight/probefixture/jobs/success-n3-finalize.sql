-- @ksql name: m5_finalize
-- @ksql timeout: 300
-- @ksql dialect: 1
--
-- n3_finalize of network-success: a final COUNT check over 顧客管理 (one read request).
ASSERT (SELECT COUNT(*) FROM LAPP_顧客管理) >= 0, 'n3_finalize: customer count must be non-negative';
