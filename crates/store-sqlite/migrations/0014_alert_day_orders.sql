-- A list of successes under an alert-creation range, sorted by another time, is read one
-- UTC day of alert creation at a time (store-sql's list_days.rs): each of these sort
-- orders, per day. The day is written exactly as the list writes it, or the index goes
-- unused. Successes only: an investigation enters these once, when it concludes, where an
-- index over every state moves it at its creation, its claim and its end as well.
CREATE INDEX investigations_by_day_created
    ON investigations ((alert_create_time / 86400000000), created_at, id)
    WHERE status = 'success';
CREATE INDEX investigations_by_day_updated
    ON investigations ((alert_create_time / 86400000000), updated_at, id)
    WHERE status = 'success';
CREATE INDEX investigations_by_day_completed
    ON investigations ((alert_create_time / 86400000000), generated_time, id)
    WHERE status = 'success';
CREATE INDEX investigations_by_day_alert_start
    ON investigations ((alert_create_time / 86400000000), alert_start_time, id)
    WHERE status = 'success';
