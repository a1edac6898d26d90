-- The entity index (0017) keyed by tenant union as well as entity. Append-only, like every
-- migration.
--
-- History reads, for each entity of a new alert, the newest alerts of the alert's own
-- tenant union naming it. With one token per entity, the index could only say which
-- alerts of ANY union named it: each read took the newest 200 and looked every one of
-- them up in `alerts` for its union, and an entity everywhere in other unions still took
-- its 200 lookups to find none of this one's. With the union in the token, the newest
-- alerts of the union are the first ones read, and nothing else is looked up.
--
-- Each token is 'e' and the lowercase hex of the UTF-8 text 'union:kind:value' (a kind
-- holds no ':'); store-sql's entity_index.rs writes the same. The old index is
-- contentless, but FTS5's own vocabulary table reads back which alert holds which token
-- ('e' and the hex of 'kind:value'); the hex of the union's 'union:' goes in front.
CREATE VIRTUAL TABLE alert_entities_by_union USING fts5(
    tokens,
    content = '',
    contentless_delete = 1,
    detail = none
);

CREATE VIRTUAL TABLE temp.alert_entity_terms USING fts5vocab(main, alert_entity_index, instance);

INSERT INTO alert_entities_by_union (rowid, tokens)
SELECT terms.doc, group_concat(
    'e' || lower(hex(a.tenant_union_id || ':')) || substr(terms.term, 2), ' ')
FROM temp.alert_entity_terms terms JOIN alerts a ON a.id = terms.doc
GROUP BY terms.doc;

DROP TABLE temp.alert_entity_terms;
DROP TABLE alert_entity_index;
