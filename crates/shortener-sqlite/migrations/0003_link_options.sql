-- Each link's own redirect options. NULL takes the service's default (the
-- configuration's `server.redirect_status`, `links.forward_query`), so that a changed
-- default reaches every link that did not choose. Booleans are 0 or 1.
ALTER TABLE links ADD COLUMN redirect_status INTEGER NULL
    CHECK (redirect_status IN (301, 302, 307, 308));
ALTER TABLE links ADD COLUMN forward_query INTEGER NULL CHECK (forward_query IN (0, 1));
ALTER TABLE links ADD COLUMN expired_url TEXT NULL;
ALTER TABLE links ADD COLUMN title TEXT NULL;
ALTER TABLE links ADD COLUMN crawlable INTEGER NOT NULL DEFAULT 0 CHECK (crawlable IN (0, 1));

-- `/robots.txt` lists the crawlable links in code order: a few among many.
CREATE INDEX links_crawlable ON links (code) WHERE crawlable = 1;
