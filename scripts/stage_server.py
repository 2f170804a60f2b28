#!/usr/bin/env python3
"""A minimal, fast HTTP/1.1 replay stage on loopback for `make bench`: answers every POST with
204, keeps connections alive, counts requests and distinct Idempotency-Keys.

usage: stage_server.py PORT [DELAY_MS]   (prints "ready" on stdout; on SIGTERM prints the
       counts; each answer waits DELAY_MS, as a service that takes that long)
"""
import asyncio
import signal
import sys

requests = 0
keys = set()
delay = 0.0


class Stage(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""

    def data_received(self, data):
        global requests
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1")
            length = 0
            key = None
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value)
                elif name == "idempotency-key":
                    key = value.strip()
            if len(self.buf) < end + 4 + length:
                return
            self.buf = self.buf[end + 4 + length:]
            requests += 1
            keys.add(key)
            reply = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"
            if delay:
                asyncio.get_running_loop().call_later(delay, self.transport.write, reply)
            else:
                self.transport.write(reply)


async def main(port):
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Stage, "127.0.0.1", port)
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, stop.set_result, None)
    print("ready", flush=True)
    await stop
    server.close()
    print(f"{requests} {len(keys)}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        delay = float(sys.argv[2]) / 1000
    asyncio.run(main(int(sys.argv[1])))
