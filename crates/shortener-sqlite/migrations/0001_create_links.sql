-- Times are unix microseconds: exact at the precision the service promises, and
-- comparable as plain integers in the atomic visit statement.
CREATE TABLE links (
    code       TEXT    NOT NULL PRIMARY KEY,
    url        TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NULL,
    max_visits INTEGER NULL CHECK (max_visits >= 0),
    visits     INTEGER NOT NULL DEFAULT 0 CHECK (visits >= 0)
) STRICT, WITHOUT ROWID;
