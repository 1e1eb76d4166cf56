-- Link management: the key that created a link, listings newest first, visits per
-- day, and idempotency keys.
ALTER TABLE links ADD COLUMN owner TEXT NULL;

-- Listings walk (created_at, code) downwards, within one owner or over all links.
CREATE INDEX links_by_owner ON links (owner, created_at DESC, code DESC);
CREATE INDEX links_by_age ON links (created_at DESC, code DESC);

-- One row per link and UTC day, written by the visit flush; people and bots apart.
-- Deleted with the link.
CREATE TABLE link_days (
    code   TEXT   COLLATE "C" NOT NULL,
    day    DATE   NOT NULL,
    visits BIGINT NOT NULL DEFAULT 0 CHECK (visits >= 0),
    bots   BIGINT NOT NULL DEFAULT 0 CHECK (bots >= 0),
    PRIMARY KEY (code, day)
);

-- An Idempotency-Key within its sender's scope; `status` and `body` are the answer to
-- replay, NULL while the first request runs.
CREATE TABLE idempotency_keys (
    scope       TEXT        NOT NULL,
    key         TEXT        NOT NULL,
    fingerprint TEXT        NOT NULL,
    claimed_at  TIMESTAMPTZ NOT NULL,
    status      INTEGER     NULL,
    body        TEXT        NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (claimed_at);
