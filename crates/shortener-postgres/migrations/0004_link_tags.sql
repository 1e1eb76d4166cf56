-- A link's tags: lower-case strings, in order, at most 10, read with the link in its one
-- row. The GIN index answers `tags @> $1`, the filter of a listing by tags.
ALTER TABLE links ADD COLUMN tags TEXT[] NOT NULL DEFAULT '{}';
CREATE INDEX links_by_tags ON links USING GIN (tags);
