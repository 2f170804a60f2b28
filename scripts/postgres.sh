#!/usr/bin/env bash
# A throwaway PostgreSQL server on loopback for the tests: installs Debian's package if it is
# missing, runs its own cluster in a temporary folder (never the system one), stops and removes it.
# TLS is on, with a certificate for 127.0.0.1 and localhost from a throwaway CA (DIR/tls/ca.pem;
# DIR/tls/other-ca.pem is an unrelated CA); the role dlqf_tls (owner of database dlqf_tls) may
# connect over TLS only.
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
  if ! command -v openssl >/dev/null; then
    echo "installing openssl from Debian's packages" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssl >/dev/null
  fi
  bin=$(bindir)
  [ -n "$bin" ] || { echo "postgres.sh: PostgreSQL is not installed" >&2; exit 1; }
  "$0" stop "$dir" 2>/dev/null || true
  mkdir -p "$dir/tls"
  tls=$dir/tls
  for ca in ca other-ca; do
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=dlqf test $ca" -keyout "$tls/$ca.key" -out "$tls/$ca.pem" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  done
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$tls/server.key" -out "$tls/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' > "$tls/server.ext"
  openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -days 30 \
    -extfile "$tls/server.ext" -out "$tls/server.crt" 2>/dev/null
  chmod 600 "$tls/server.key"
  [ "$(id -u)" = 0 ] && chown -R postgres "$dir"
  as_postgres "$bin/initdb" -D "$dir/data" -U dlqf --auth=trust -E UTF8 >/dev/null
  # The TLS-only role first: pg_hba takes the first line that matches.
  { printf 'hostssl all dlqf_tls 127.0.0.1/32 trust\nhostnossl all dlqf_tls all reject\n'; cat "$dir/data/pg_hba.conf"; } > "$dir/pg_hba.conf"
  cp "$dir/pg_hba.conf" "$dir/data/pg_hba.conf"
  as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c ssl=on -c ssl_cert_file=$tls/server.crt -c ssl_key_file=$tls/server.key" \
    start >/dev/null
  as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U dlqf dlqf
  as_postgres "$bin/psql" -q -h 127.0.0.1 -p "$port" -U dlqf -d dlqf -c "CREATE ROLE dlqf_tls LOGIN" >/dev/null
  as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U dlqf -O dlqf_tls dlqf_tls
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
