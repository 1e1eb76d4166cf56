-- Link management: the key that created a link, listings newest first, visits per
-- day, and idempotency keys.
ALTER TABLE links ADD COLUMN owner TEXT NULL;

-- Listings walk (created_at, code) downwards, within one owner or over all links.
CREATE INDEX links_by_owner ON links (owner, created_at DESC, code DESC);
CREATE INDEX links_by_age ON links (created_at DESC, code DESC);

-- One row per link and UTC day ('YYYY-MM-DD', which sorts as dates do), written by the
-- visit flush; people and bots apart. Deleted with the link.
CREATE TABLE link_days (
    code   TEXT    NOT NULL,
    day    TEXT    NOT NULL,
    visits INTEGER NOT NULL DEFAULT 0 CHECK (visits >= 0),
    bots   INTEGER NOT NULL DEFAULT 0 CHECK (bots >= 0),
    PRIMARY KEY (code, day)
) STRICT, WITHOUT ROWID;

-- An Idempotency-Key within its sender's scope; `status` and `body` are the answer to
-- replay, NULL while the first request runs. Times are unix microseconds.
CREATE TABLE idempotency_keys (
    scope       TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    claimed_at  INTEGER NOT NULL,
    status      INTEGER NULL,
    body        TEXT    NULL,
    PRIMARY KEY (scope, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (claimed_at);
