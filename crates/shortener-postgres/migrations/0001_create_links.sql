-- TIMESTAMPTZ keeps microseconds, exactly the precision the service promises, and reads
-- as a time in psql. Counts are BIGINT: the port's u64, within i64. Codes compare byte by
-- byte ("C"), whatever the database's locale: they are case-sensitive ASCII.
CREATE TABLE links (
    code       TEXT        COLLATE "C" NOT NULL PRIMARY KEY,
    url        TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NULL,
    max_visits BIGINT      NULL CHECK (max_visits >= 0),
    visits     BIGINT      NOT NULL DEFAULT 0 CHECK (visits >= 0)
);
