#!/usr/bin/env bash
# Throwaway RabbitMQ and Redis servers on loopback for the replay tests (Debian's packages,
# installed if missing), each with its data in DIR, never the system's; stopped and removed by
# `stop` whatever the tests did.
#   brokers.sh start DIR AMQP_PORT REDIS_PORT   |   brokers.sh stop DIR
#   brokers.sh vhost DIR NAME           a virtual host of a test's own, open to guest
set -euo pipefail
cmd=$1 dir=$2

rabbit_env() {
  export RABBITMQ_NODENAME=dlqf-test@localhost RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=$1
  export RABBITMQ_DIST_PORT=$(($1 + 1)) ERL_EPMD_PORT=$(($1 + 2)) ERL_EPMD_ADDRESS=127.0.0.1
  export RABBITMQ_MNESIA_BASE=$dir/rabbitmq/mnesia RABBITMQ_LOG_BASE=$dir/rabbitmq/log
  export RABBITMQ_CONFIG_FILE=$dir/rabbitmq/none RABBITMQ_ENABLED_PLUGINS_FILE=$dir/rabbitmq/enabled_plugins
}

# Processes whose command line holds $1, stopped (TERM, then KILL after 10 s). The test node's
# Erlang VM is found by its epmd port and Redis by its address, both this script's alone: a
# server an earlier run could not stop would hold its port and answer for the next run's.
stop_processes() {
  pgrep -f -- "$1" >/dev/null || return 0
  pkill -f -- "$1" || true
  for _ in $(seq 1 100); do
    pgrep -f -- "$1" >/dev/null || return 0
    sleep 0.1
  done
  pkill -9 -f -- "$1" || true
}
rabbit_vm() { echo "-epmd_port $(($1 + 2)) "; }

case $cmd in
start)
  amqp_port=$3 redis_port=$4
  if ! command -v rabbitmq-server >/dev/null || ! command -v redis-server >/dev/null; then
    echo "installing rabbitmq-server and redis-server from Debian's packages" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends rabbitmq-server redis-server >/dev/null
  fi
  # Servers an earlier run left on these ports, stopped first.
  stop_processes "$(rabbit_vm "$amqp_port")"
  stop_processes "redis-server 127.0.0.1:$redis_port"
  rm -rf "$dir" && mkdir -p "$dir/rabbitmq/mnesia" "$dir/rabbitmq/log" "$dir/redis"
  echo "[]." > "$dir/rabbitmq/enabled_plugins"
  echo "$amqp_port" > "$dir/amqp_port"
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir/redis" \
    --daemonize yes --pidfile "$dir/redis/redis.pid" --logfile "$dir/redis/redis.log"
  # The Debian wrapper would switch to the rabbitmq user, who cannot write DIR: run its server.
  (rabbit_env "$amqp_port"; setsid /usr/lib/rabbitmq/bin/rabbitmq-server > "$dir/rabbitmq/server.log" 2>&1 &)
  for _ in $(seq 1 600); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$amqp_port") 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null; then
      # Up when its own CLI reaches it, as the tests' vhosts will. RabbitMQ 3.10's
      # `await_startup` can answer `rabbit_is_not_running` for a node whose listeners are open
      # but whose boot has not finished: asked again, for 90 s at most, until it says ready.
      deadline=$((SECONDS + 90))
      while [ "$SECONDS" -lt "$deadline" ]; do
        (rabbit_env "$amqp_port"; /usr/lib/rabbitmq/bin/rabbitmqctl await_startup --timeout 30 >/dev/null 2>"$dir/rabbitmq/await.log") && exit 0
        sleep 1
      done
      break
    fi
    sleep 0.1
  done
  echo "brokers.sh: RabbitMQ or Redis did not start; the ends of their logs follow" >&2
  for log in "$dir"/rabbitmq/server.log "$dir"/rabbitmq/await.log "$dir"/rabbitmq/log/*.log "$dir"/redis/redis.log; do
    [ -f "$log" ] && { echo "== $log" && tail -n 15 "$log"; } >&2
  done
  exit 1
  ;;
stop)
  if [ -f "$dir/redis/redis.pid" ]; then
    kill "$(cat "$dir/redis/redis.pid")" 2>/dev/null || true
  fi
  if [ -f "$dir/amqp_port" ]; then
    amqp_port=$(cat "$dir/amqp_port")
    # `shutdown` returns once the VM has exited; a node it cannot reach is stopped by process.
    (rabbit_env "$amqp_port"; /usr/lib/rabbitmq/bin/rabbitmqctl shutdown >/dev/null 2>&1 || true)
    stop_processes "$(rabbit_vm "$amqp_port")"
    (rabbit_env "$amqp_port"; epmd -kill >/dev/null 2>&1 || true)
  fi
  rm -rf "$dir"
  ;;
vhost)
  (rabbit_env "$(cat "$dir/amqp_port")"; /usr/lib/rabbitmq/bin/rabbitmqctl add_vhost "$3" >/dev/null 2>&1 || true
   /usr/lib/rabbitmq/bin/rabbitmqctl set_permissions -p "$3" guest ".*" ".*" ".*" >/dev/null)
  ;;
*)
  echo "usage: brokers.sh start DIR AMQP_PORT REDIS_PORT | stop DIR | vhost DIR NAME" >&2
  exit 2
  ;;
esac
