#!/usr/bin/env bash
# A throwaway PostgreSQL 15 + pgvector server for the tests (CI and developers).
#
#   scripts/ci/postgres.sh start   build pgvector if missing, initdb a cluster in a temporary
#                                  folder, start it on 127.0.0.1:$PGPORT, create the extension,
#                                  print the URL (the last line of stdout)
#   scripts/ci/postgres.sh stop    stop that cluster and remove its folder
#
# Idempotent: a second `start` reuses the built extension and the running server. Needs root
# (apt, `su postgres`) on a Debian machine with PostgreSQL 15 installed (stopped). pgvector has
# no Debian 12 package, so it is built from Debian trixie's source package.
# Environment: PGPORT (55432), TETHER_PG_DIR (the cluster's folder; /tmp/tether-pg-$PGPORT).
set -euo pipefail
PORT="${PGPORT:-55432}"
DIR="${TETHER_PG_DIR:-/tmp/tether-pg-$PORT}"
BIN=/usr/lib/postgresql/15/bin
URL="postgresql://postgres@127.0.0.1:$PORT/postgres"

log() { echo "postgres.sh: $*" >&2; }

build_pgvector() {
  if [ -f "$($BIN/pg_config --pkglibdir)/vector.so" ] \
    && [ -f "$($BIN/pg_config --sharedir)/extension/vector.control" ]; then
    return
  fi
  log "building pgvector from Debian trixie's source package"
  [ -x "$BIN/pg_config" ] && [ -f "$($BIN/pg_config --includedir-server)/postgres.h" ] \
    || apt-get install -y -q postgresql-server-dev-15 >&2
  local S
  S=$(mktemp -d /tmp/tether-pgvector.XXXXXX)
  local MIRROR
  MIRROR=$(grep -m1 -oP '^URIs:\s*\K\S+' /etc/apt/sources.list.d/debian.sources)
  mkdir -p "$S/lists/partial" "$S/cache/archives/partial"
  echo "deb-src $MIRROR trixie main" > "$S/sources.list"
  local A=(-o "Dir::Etc::SourceList=$S/sources.list" -o Dir::Etc::SourceParts=/dev/null
           -o "Dir::State::Lists=$S/lists" -o "Dir::Cache=$S/cache")
  apt-get "${A[@]}" -q update >&2
  (cd "$S" && apt-get "${A[@]}" source --download-only pgvector >&2)
  tar xzf "$S"/pgvector_*.orig.tar.gz -C "$S"
  make -C "$S"/pgvector-*/ -j2 PG_CONFIG="$BIN/pg_config" install >&2
  rm -rf "$S"
}

running() { [ -f "$DIR/data/postmaster.pid" ] && su postgres -c "$BIN/pg_ctl -D $DIR/data status" >/dev/null 2>&1; }

start() {
  build_pgvector
  if ! running; then
    install -d -o postgres "$DIR"
    if [ ! -f "$DIR/data/PG_VERSION" ]; then
      su postgres -c "$BIN/initdb -D $DIR/data -A trust -U postgres" >&2
    fi
    su postgres -c "$BIN/pg_ctl -D $DIR/data -l $DIR/log -w -o '-p $PORT -k $DIR -c listen_addresses=127.0.0.1' start" >&2
  fi
  psql -q "$URL" -c 'CREATE EXTENSION IF NOT EXISTS vector' >&2
  echo "$URL"
}

stop() {
  if running; then
    su postgres -c "$BIN/pg_ctl -D $DIR/data -m fast -w stop" >&2
  fi
  rm -rf "$DIR"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
