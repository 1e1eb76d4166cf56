-- Links behind a password: the argon2id hash of the password in the PHC string format
-- (parameters and salt included), never the password. NULL: the link is open. A
-- nullable column without a default rewrites no row.
ALTER TABLE links ADD COLUMN password_hash TEXT NULL;
