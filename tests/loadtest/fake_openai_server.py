"""A fake /v1/completions server on loopback for run_loadtest_failures.sh.

usage: fake_openai_server.py MODE PORT_FILE BODIES_FILE

MODE says how every POST is answered:
  error500  HTTP 500 with an OpenAI error object, message "fake failure N"
  error400  HTTP 400 with an OpenAI error object naming max_tokens
  empty     HTTP 200, a stream with no text and 0 completion tokens
  ok        HTTP 200, a stream of 4 text chunks and usage of 4 tokens
The port it listens on (chosen by the system) goes to PORT_FILE once it
listens; each request body, one per line, to BODIES_FILE. It serves until
killed.
"""
import http.server
import json
import os
import sys
import threading

mode, port_file, bodies_file = sys.argv[1:4]
lock = threading.Lock()
served = 0


def sse(events):
    return "".join("data: " + json.dumps(e) + "\n\n" for e in events) + "data: [DONE]\n\n"


def chunk(text):
    return {"object": "text_completion", "choices": [{"index": 0, "text": text, "finish_reason": None}]}


def usage(tokens):
    return {"object": "text_completion", "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, content_type, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        global served
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        with lock:
            served += 1
            number = served
            with open(bodies_file, "a") as out:
                out.write(body.replace("\n", " ") + "\n")
        if mode == "error500":
            error = {"error": {"message": "fake failure %d" % number, "type": "server_error", "code": 500}}
            self.answer(500, "application/json", json.dumps(error))
        elif mode == "error400":
            error = {"error": {"message": "'max_tokens' is too large for the fake", "type": "invalid_request_error",
                               "param": "max_tokens", "code": None}}
            self.answer(400, "application/json", json.dumps(error))
        elif mode == "empty":
            self.answer(200, "text/event-stream", sse([chunk(""), usage(0)]))
        else:
            self.answer(200, "text/event-stream", sse([chunk(w) for w in ["one", " two", " three", " four"]] + [usage(4)]))


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as out:
    out.write(str(server.server_address[1]))
# Renamed once written whole, so the script never reads half a port.
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
