-- A link's tags: a JSON array of lower-case strings, in order, at most 10. They are read
-- with the link in its one row; `json_each` filters listings by them and counts them.
-- No index: a listing walks the owner's links newest first and stops at its limit.
ALTER TABLE links ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
