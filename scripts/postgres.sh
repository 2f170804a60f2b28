#!/usr/bin/env bash
# A throwaway PostgreSQL server on loopback for the tests: installs Debian's package if it is
# missing, runs its own cluster in a temporary folder (never the system one), stops and removes it.
#   postgres.sh start DIR PORT   |   postgres.sh stop DIR
set -euo pipefail
cmd=$1 dir=$2 port=${3:-55432}

bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case $cmd in
start)
  if [ -z "$(bindir)" ]; then
    echo "installing PostgreSQL from Debian's packages" >&2
    # No system cluster: the tests run their own.
    mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  fi
  bin=$(bindir)
  [ -n "$bin" ] || { echo "postgres.sh: PostgreSQL is not installed" >&2; exit 1; }
  "$0" stop "$dir" 2>/dev/null || true
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  as_postgres "$bin/initdb" -D "$dir/data" -U dlqf --auth=trust -E UTF8 >/dev/null
  as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
  as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U dlqf dlqf
  echo "postgres://dlqf@127.0.0.1:$port/dlqf"
  ;;
stop)
  bin=$(bindir)
  if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
    as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: postgres.sh start DIR PORT | stop DIR" >&2
  exit 2
  ;;
esac
