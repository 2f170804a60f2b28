#!/usr/bin/env bash
# A throwaway S3-compatible server (moto, from PyPI) on loopback for the tests.
#   moto.sh start PYTHON_BIN_DIR PORT PIDFILE   |   moto.sh stop PIDFILE
set -euo pipefail
case $1 in
start)
  bindir=$2 port=$3 pidfile=$4
  "$bindir/moto_server" -H 127.0.0.1 -p "$port" > "$pidfile.log" 2>&1 &
  echo $! > "$pidfile"
  for _ in $(seq 1 100); do
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "moto.sh: moto_server exited (is port $port taken?); see $pidfile.log" >&2
      exit 1
    fi
    if "$bindir/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/moto-api/')" 2>/dev/null; then
      exit 0
    fi
    sleep 0.1
  done
  echo "moto.sh: moto_server did not start; see $pidfile.log" >&2
  exit 1
  ;;
stop)
  pidfile=$2
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$pidfile" "$pidfile.log"
  fi
  ;;
*)
  echo "usage: moto.sh start BINDIR PORT PIDFILE | stop PIDFILE" >&2
  exit 2
  ;;
esac
