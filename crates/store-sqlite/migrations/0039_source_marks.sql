-- A success's search document carries its source's mark from now on, beside the mark of
-- a success (store-sql's search_marks), so that a search among the successes of some
-- sources is counted by the search index alone. Those written before lack it: the store
-- rewrites every success's document again in the background, from the newest down, and
-- counts searches without the marks until it is done.
UPDATE search_marks
SET unmarked_through = COALESCE(
    (SELECT MAX(id) FROM investigations WHERE status = 'success'), 0);
