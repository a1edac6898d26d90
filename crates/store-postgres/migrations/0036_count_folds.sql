-- The last fold of each table of count deltas, by whichever process folded it
-- (store-sql's count_folding.rs). Every process decides from this row whether a table is
-- due: when each kept its own, one process's fold (which inserts a row per combination)
-- looked like as many new deltas to every other process, which folded again, and so on,
-- without end.
CREATE TABLE count_folds (
    table_name TEXT PRIMARY KEY,
    -- The rows the fold left.
    rows_left BIGINT NOT NULL,
    -- The table's `n_tup_ins` read just before the fold (or the count), without the
    -- fold's own inserts.
    inserted_before BIGINT NOT NULL
);
