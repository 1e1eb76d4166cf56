-- API keys made while the service runs (`shortener keys new --store`, `POST /api/v1/keys`),
-- beside those of the configuration file. A key is known by the SHA-256 of its secret
-- (hex); the secret is never stored. A revoked key stays, so that its name is never
-- given again and its refusal is told apart from an unknown key's. Times are Unix
-- microseconds, as for links.
CREATE TABLE api_keys (
    name         TEXT    NOT NULL PRIMARY KEY,
    sha256       TEXT    NOT NULL UNIQUE,
    scopes       TEXT    NOT NULL,
    owner        TEXT    NULL,
    tier         TEXT    NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NULL,
    revoked_at   INTEGER NULL,
    last_used_at INTEGER NULL
) STRICT;
