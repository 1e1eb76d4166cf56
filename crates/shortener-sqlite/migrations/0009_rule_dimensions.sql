-- Visits counted by the redirect rule and the split variant that sent them: two more
-- dimensions. SQLite cannot change a CHECK constraint in place, so the table is made
-- again with the wider one and its rows copied over.
CREATE TABLE link_dimensions_new (
    code      TEXT    NOT NULL,
    domain    TEXT    NOT NULL,
    day       TEXT    NOT NULL,
    dimension TEXT    NOT NULL
        CHECK (dimension IN ('referrer', 'country', 'browser', 'os', 'device', 'rule', 'variant')),
    value     TEXT    NOT NULL,
    visits    INTEGER NOT NULL CHECK (visits >= 0),
    PRIMARY KEY (code, domain, day, dimension, value)
) STRICT, WITHOUT ROWID;
INSERT INTO link_dimensions_new SELECT code, domain, day, dimension, value, visits FROM link_dimensions;
DROP TABLE link_dimensions;
ALTER TABLE link_dimensions_new RENAME TO link_dimensions;
