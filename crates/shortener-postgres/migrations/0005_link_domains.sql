-- Domains: a link belongs to one domain, and its code is unique on that domain only.
-- The default domain (the service's public_url) is stored as '', so every existing link
-- moves to it, and a later change of public_url keeps them there.
ALTER TABLE links ADD COLUMN domain TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE links DROP CONSTRAINT links_pkey;
-- The code leads the key: codes mostly differ, so it decides most comparisons.
ALTER TABLE links ADD PRIMARY KEY (code, domain);

-- Listings walk these newest first; the domain breaks ties of one code on two domains.
DROP INDEX links_by_owner;
DROP INDEX links_by_age;
DROP INDEX links_crawlable;
CREATE INDEX links_by_owner ON links (owner, created_at DESC, code DESC, domain DESC);
CREATE INDEX links_by_age ON links (created_at DESC, code DESC, domain DESC);
CREATE INDEX links_crawlable ON links (domain, code) WHERE crawlable;

ALTER TABLE link_days ADD COLUMN domain TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE link_days DROP CONSTRAINT link_days_pkey;
ALTER TABLE link_days ADD PRIMARY KEY (code, domain, day);
