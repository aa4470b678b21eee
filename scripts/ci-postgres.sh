#!/usr/bin/env bash
# PostgreSQL for the shared-database tests (SPEC §12): installed if missing (Debian), started
# if down, and reachable as user postgres on 127.0.0.1:5432 without a password (trust, loopback
# only). Idempotent and quiet; the tests make and drop their own databases.
set -euo pipefail
if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq postgresql >/dev/null
fi
version="$(ls /etc/postgresql | sort -V | tail -1)"
ready() { pg_isready -q -h 127.0.0.1 -p 5432; }
wait_ready() {
    for _ in $(seq 1 100); do ready && return 0; sleep 0.2; done
    echo "PostgreSQL did not come up on 127.0.0.1:5432" >&2
    return 1
}
if ! ready; then
    pg_ctlcluster --skip-systemctl-redirect "$version" main start
    wait_ready
fi
if ! psql -w -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1" >/dev/null 2>&1; then
    hba="/etc/postgresql/$version/main/pg_hba.conf"
    grep -q "hermes-tests" "$hba" || sed -i "1i host all postgres 127.0.0.1/32 trust  # hermes-tests" "$hba"
    pg_ctlcluster --skip-systemctl-redirect "$version" main reload
    wait_ready
fi
