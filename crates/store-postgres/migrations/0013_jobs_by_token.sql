-- The jobs of one claim, found by the lease token it gave them: the claim marks their
-- investigations as loading in the same round trip as it leases them, without reading
-- the claimed ids back first. Only jobs waiting or running are in the table, so the index
-- stays as small as the queue.
CREATE INDEX jobs_by_token ON jobs (lease_token);
