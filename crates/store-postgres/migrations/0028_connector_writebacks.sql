-- Write-back (sleuth_store::ConnectorStore): verdicts a connector owes its vendor. A row is
-- made with its alert, in the transaction that stores the page, for connectors that write
-- back; it is sent once its investigation concluded, and retried with backoff until sent.
-- The connector keeps the counts its state shows.
CREATE TABLE connector_writebacks (
    id BIGSERIAL PRIMARY KEY,
    connector_id BIGINT NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
    investigation_id BIGINT NOT NULL REFERENCES investigations(id) ON DELETE CASCADE,
    vendor_alert_id TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error TEXT,
    sent_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX connector_writebacks_due ON connector_writebacks (next_attempt_at)
    WHERE sent_at IS NULL;
CREATE INDEX connector_writebacks_by_connector ON connector_writebacks (connector_id);
CREATE INDEX connector_writebacks_by_investigation ON connector_writebacks (investigation_id);

ALTER TABLE connectors ADD COLUMN writebacks_sent BIGINT NOT NULL DEFAULT 0;
ALTER TABLE connectors ADD COLUMN last_writeback_error TEXT;
ALTER TABLE connectors ADD COLUMN last_writeback_error_at BIGINT;
