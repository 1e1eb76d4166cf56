#!/bin/sh
# The official image's first start, for the variables the stand-in honours: a new data
# directory is made with POSTGRES_USER as its superuser (password from POSTGRES_PASSWORD
# or the file POSTGRES_PASSWORD_FILE names) and POSTGRES_DB created; then the server runs
# as `postgres` (the container's first process, so that it gets the stop signal),
# listening on every address with password authentication.
set -eu
bin=/usr/lib/postgresql/15/bin
as_postgres="setpriv --reuid=postgres --regid=postgres --init-groups"
user=${POSTGRES_USER:-postgres}
database=${POSTGRES_DB:-$user}
if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
    POSTGRES_PASSWORD=$(cat "$POSTGRES_PASSWORD_FILE")
fi
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE is needed}" > /tmp/password
    chown postgres /tmp/password
    $as_postgres "$bin/initdb" -D "$PGDATA" -U "$user" --pwfile=/tmp/password \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm /tmp/password
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$database" != postgres ]; then
        echo "CREATE DATABASE \"$database\" OWNER \"$user\";" \
            | $as_postgres "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
    fi
fi
exec $as_postgres "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'
