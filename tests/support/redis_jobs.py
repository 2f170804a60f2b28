"""Sidekiq's queues in a Redis server, read through redis-py (an independent client).

usage: redis_jobs.py read URL   print {"queues": [...], "jobs": {queue: [job, ...]}} with each
                                queue's jobs in the order a Sidekiq worker would take them
       redis_jobs.py flush URL     empty the database
       redis_jobs.py pause URL MS  hold every client's writes for MS milliseconds (an outage)
       redis_jobs.py unpause URL   end the pause
"""
import json
import sys

import redis

cmd, url = sys.argv[1], sys.argv[2]
r = redis.Redis.from_url(url)
if cmd == "read":
    queues = sorted(q.decode() for q in r.smembers("queues"))
    # LPUSH adds at the head, and a worker takes from the tail (BRPOP): oldest first.
    jobs = {q: [json.loads(j) for j in reversed(r.lrange(f"queue:{q}", 0, -1))] for q in queues}
    print(json.dumps({"queues": queues, "jobs": jobs}))
elif cmd == "flush":
    r.flushdb()
elif cmd == "pause":
    r.execute_command("CLIENT", "PAUSE", sys.argv[3], "WRITE")
elif cmd == "unpause":
    r.execute_command("CLIENT", "UNPAUSE")
else:
    sys.exit(f"unknown command {cmd}")
