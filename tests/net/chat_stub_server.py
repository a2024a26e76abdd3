#!/usr/bin/env python3
"""A stand-in OpenAI-compatible chat server for tests/net (Python stdlib only).

Usage: chat_stub_server.py [--refuse STATUS]

Listens on 127.0.0.1 on a free port and prints that port as its first stdout
line. Exits when its stdin closes (so it never outlives the test that started
it) or when killed.

POST /v1/chat/completions: the behaviour is chosen by the last user message,
from the token after "MODE:" (no token = ok):
  ok                 200, content "critique of: <that message>"
  echo               200, content = JSON {"body": <request>, "authorization": <header or null>, "path": ...}
  slow[:MS]          sleeps MS ms (default 5000), then as ok
  sleep:MS           sleeps MS ms, then as ok (for the in-flight counts)
  fail_twice:KEY     500 for the first two requests with this KEY, then as ok
  status:CODE        CODE with {"error": {"message": "stub status CODE"}} (429 adds Retry-After: 0)
  malformed          200, a body that is not JSON
  no_content         200, JSON without "choices"
  not_string         200, choices[0].message.content = 42
  empty              200, content ""
  big:N              200, content of N times "x"
  reply:TEXT         200, content TEXT with "_" read as " " (a judge's verdict)
  yes_if:WORD        200, content "Yes." when WORD occurs in the message outside this
                     mode token (a checklist item that names it), else "No."
With --refuse STATUS every POST gets STATUS {"error": {"message": "invalid API key"}}.
Any other POST path is a 404.

GET /count: {"count": POST requests so far}; GET /max_inflight: {"max_inflight":
the most POST requests handled at once}.
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
n_requests = 0
n_inflight = 0
max_inflight = 0
fail_counts = {}
refuse_status = 0


def chat_reply(content):
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "model": "stub",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

    def log_message(self, format, *args):
        pass

    def send(self, status, body, headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers:
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with lock:
            stats = {"/count": {"count": n_requests}, "/max_inflight": {"max_inflight": max_inflight}}
        if self.path in stats:
            self.send(200, stats[self.path])
        else:
            self.send(404, {"error": {"message": "no such path"}})

    def do_POST(self):
        global n_requests, n_inflight, max_inflight
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            n_requests += 1
            n_inflight += 1
            max_inflight = max(max_inflight, n_inflight)
        try:
            self.chat(raw)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
            self.close_connection = True
        finally:
            with lock:
                n_inflight -= 1

    def chat(self, raw):
        if refuse_status:
            return self.send(refuse_status, {"error": {"message": "invalid API key"}})
        if self.path != "/v1/chat/completions":
            return self.send(404, {"error": {"message": "no route " + self.path}})
        request = json.loads(raw)
        users = [m["content"] for m in request["messages"] if m["role"] == "user"]
        text = users[-1] if users else ""
        mode = text.split("MODE:", 1)[1].split()[0] if "MODE:" in text else "ok"
        name, _, arg = mode.partition(":")
        if name == "echo":
            return self.send(200, chat_reply(json.dumps(
                {"body": request, "authorization": self.headers.get("Authorization"), "path": self.path})))
        if name in ("slow", "sleep"):
            time.sleep(int(arg or 5000) / 1000)
        elif name == "fail_twice":
            with lock:
                fail_counts[arg] = fail_counts.get(arg, 0) + 1
                n = fail_counts[arg]
            if n <= 2:
                return self.send(500, {"error": {"message": "stub failure %d" % n}})
        elif name == "status":
            headers = [("Retry-After", "0")] if arg == "429" else []
            return self.send(int(arg), {"error": {"message": "stub status " + arg}}, headers)
        elif name == "malformed":
            return self.send(200, b"this is not json {")
        elif name == "no_content":
            return self.send(200, {"id": "chatcmpl-stub", "object": "chat.completion"})
        elif name == "not_string":
            reply = chat_reply("")
            reply["choices"][0]["message"]["content"] = 42
            return self.send(200, reply)
        elif name == "empty":
            return self.send(200, chat_reply(""))
        elif name == "big":
            return self.send(200, chat_reply("x" * int(arg)))
        elif name == "reply":
            return self.send(200, chat_reply(arg.replace("_", " ")))
        elif name == "yes_if":
            rest = text.replace("MODE: " + mode, "").replace("MODE:" + mode, "")
            return self.send(200, chat_reply("Yes." if arg in rest else "No."))
        self.send(200, chat_reply("critique of: " + text))


def main():
    global refuse_status
    parser = argparse.ArgumentParser()
    parser.add_argument("--refuse", type=int, default=0)
    refuse_status = parser.parse_args().refuse
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()  # returns when the test closes the pipe or dies


if __name__ == "__main__":
    main()
