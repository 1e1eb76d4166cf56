-- Domains: a link belongs to one domain, and its code is unique on that domain only.
-- The default domain (the service's public_url) is stored as '', so every existing link
-- moves to it, and a later change of public_url keeps them there.
-- SQLite cannot change a primary key in place: both tables are rebuilt, in the
-- migration's transaction. The code leads each key and `domain` follows it: codes
-- mostly differ, so a key comparison is mostly decided by SQLite's fast path for a
-- leading text column (with `domain` first, every default-domain row ties on it, and
-- each comparison takes the general path: a quarter more instructions per redirect
-- when the visit flush touches many links, measured under callgrind).
CREATE TABLE links_by_domain (
    domain          TEXT    NOT NULL DEFAULT '',
    code            TEXT    NOT NULL,
    url             TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NULL,
    max_visits      INTEGER NULL CHECK (max_visits >= 0),
    visits          INTEGER NOT NULL DEFAULT 0 CHECK (visits >= 0),
    owner           TEXT    NULL,
    redirect_status INTEGER NULL CHECK (redirect_status IN (301, 302, 307, 308)),
    forward_query   INTEGER NULL CHECK (forward_query IN (0, 1)),
    expired_url     TEXT    NULL,
    title           TEXT    NULL,
    crawlable       INTEGER NOT NULL DEFAULT 0 CHECK (crawlable IN (0, 1)),
    tags            TEXT    NOT NULL DEFAULT '[]',
    PRIMARY KEY (code, domain)
) STRICT, WITHOUT ROWID;

INSERT INTO links_by_domain (domain, code, url, created_at, expires_at, max_visits, visits,
    owner, redirect_status, forward_query, expired_url, title, crawlable, tags)
SELECT '', code, url, created_at, expires_at, max_visits, visits,
    owner, redirect_status, forward_query, expired_url, title, crawlable, tags
FROM links;

DROP TABLE links;
ALTER TABLE links_by_domain RENAME TO links;

-- Listings walk these newest first; the domain breaks ties of one code on two domains.
CREATE INDEX links_by_owner ON links (owner, created_at DESC, code DESC, domain DESC);
CREATE INDEX links_by_age ON links (created_at DESC, code DESC, domain DESC);
CREATE INDEX links_crawlable ON links (domain, code) WHERE crawlable = 1;

CREATE TABLE link_days_by_domain (
    domain TEXT    NOT NULL DEFAULT '',
    code   TEXT    NOT NULL,
    day    TEXT    NOT NULL,
    visits INTEGER NOT NULL DEFAULT 0 CHECK (visits >= 0),
    bots   INTEGER NOT NULL DEFAULT 0 CHECK (bots >= 0),
    PRIMARY KEY (code, domain, day)
) STRICT, WITHOUT ROWID;

INSERT INTO link_days_by_domain (domain, code, day, visits, bots)
SELECT '', code, day, visits, bots FROM link_days;

DROP TABLE link_days;
ALTER TABLE link_days_by_domain RENAME TO link_days;
