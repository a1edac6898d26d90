-- Retention of the notification delivery log: delivered rows older than
-- `notifications.keep_delivered_days` are deleted by the deliverer, oldest first. The
-- index holds only delivered rows, so a purge reads what it deletes and nothing else.
CREATE INDEX notification_deliveries_delivered
    ON notification_deliveries (delivered_at) WHERE state = 'delivered';
