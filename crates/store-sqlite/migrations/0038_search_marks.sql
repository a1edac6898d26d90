-- Successes carry a mark in their search document from now on (store-sql's search_marks),
-- so that a search is counted among them by the search index alone. Those concluded
-- before it lack the mark: the highest of their ids is kept here, and the store marks
-- them in the background from the newest down, lowering it; until it is 0, searches are
-- counted without the mark. One row.
CREATE TABLE search_marks (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    unmarked_through INTEGER NOT NULL
);

INSERT INTO search_marks (id, unmarked_through)
SELECT 1, COALESCE(MAX(id), 0) FROM investigations WHERE status = 'success';
