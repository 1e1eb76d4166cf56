-- Each link's own redirect options. NULL takes the service's default (the
-- configuration's `server.redirect_status`, `links.forward_query`), so that a changed
-- default reaches every link that did not choose. Adding columns with a constant default
-- rewrites no row (PostgreSQL 11 and later).
ALTER TABLE links
    ADD COLUMN redirect_status SMALLINT NULL CHECK (redirect_status IN (301, 302, 307, 308)),
    ADD COLUMN forward_query   BOOLEAN  NULL,
    ADD COLUMN expired_url     TEXT     NULL,
    ADD COLUMN title           TEXT     NULL,
    ADD COLUMN crawlable       BOOLEAN  NOT NULL DEFAULT false;

-- `/robots.txt` lists the crawlable links in code order: a few among many.
CREATE INDEX links_crawlable ON links (code) WHERE crawlable;
