#!/usr/bin/env python3
"""Issue 51's two storms against a tandem-server that this script starts on 127.0.0.1 (docs/http.md,
"Hostile clients"). Run by hand, outside the sanitizers (a Release build):

  python3 scripts/http-storm.py memory --server build/tandem-server -m MODEL.gguf [-- extra flags]
  python3 scripts/http-storm.py drip   --server build/tandem-server -m MODEL.gguf [-- extra flags]

memory: warm-up (a chat, a small /tokenize), then two rounds of 40 x 10 MB /tokenize, each on a
        new connection (half with pieces); the server's RSS (VmRSS of its process) after warm-up
        and after each round. Passes when both rounds end within +256 MiB of warm-up and the
        second round ends within 32 MiB of the first.
drip:   100 connections that send one header byte every 1.5 s for 30 s (a dropped one reconnects,
        so that 100 drip all along), a /health probe on a new connection every second, and a
        generation request at 10 s. Passes when every probe is answered within 1 s and the
        generation completes.

Bounded in time and count; loopback only; exits 0 when the storm passed, 1 otherwise.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time


def start_server(args):
    cmd = [args.server, "-m", args.model, "--host", "127.0.0.1", "--port", "0"] + args.extra
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if "listening on http://" in line:
            port = int(line.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])
            return proc, port
    proc.kill()
    sys.exit("the server did not start: " + " ".join(cmd))


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def request(port, method, path, body=None, timeout=120):
    """One request on a new connection; returns (status, body bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    data = body.encode() if isinstance(body, str) else (body or b"")
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    s.sendall(head.encode() + b"\r\n" + data)
    chunks = []
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        chunks.append(b)
    s.close()
    resp = b"".join(chunks)
    status = int(resp[9:12]) if resp.startswith(b"HTTP/1.1 ") else 0
    return status, resp


def metric(port, name):
    _, resp = request(port, "GET", "/metrics")
    for line in resp.decode(errors="replace").splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def storm_memory(args, proc, port):
    chat = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
    assert request(port, "POST", "/v1/chat/completions", chat)[0] == 200
    assert request(port, "POST", "/tokenize", json.dumps({"content": "warm up " * 1000}))[0] == 200
    time.sleep(1)
    warm = rss_mib(proc.pid)
    print(f"warm-up RSS: {warm:.0f} MiB")
    words = "The quick brown fox jumps over the lazy dog; naïve café 12345 — ünïcödé. "
    text = (words * (args.mib * 1048576 // len(words) + 1))[: args.mib * 1048576]
    results = []
    for rnd in (1, 2):
        t0 = time.time()
        statuses = {}
        peak = warm
        for i in range(args.count):
            body = json.dumps({"content": text, "with_pieces": i % 2 == 1})
            st, _ = request(port, "POST", "/tokenize", body, timeout=600)
            statuses[st] = statuses.get(st, 0) + 1
            peak = max(peak, rss_mib(proc.pid))
        time.sleep(1)
        after = rss_mib(proc.pid)
        results.append(after)
        print(f"round {rnd}: {args.count} x {args.mib} MB /tokenize in {time.time() - t0:.0f} s, statuses {statuses}, "
              f"RSS after {after:.0f} MiB (+{after - warm:.0f}), peak during {peak:.0f} MiB")
    scratch = metric(port, "tandem_tokenizer_scratch_bytes")
    print(f"tandem_tokenizer_scratch_bytes after: {scratch:.0f}")
    ok = all(r <= warm + 256 for r in results) and results[1] <= results[0] + 32
    print("memory storm:", "PASS" if ok else "FAIL",
          f"(bound: warm-up + 256 MiB = {warm + 256:.0f} MiB; second round within 32 MiB of the first)")
    return ok


def storm_drip(args, proc, port):
    stop = threading.Event()
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"x" * 4096
    socks = [None] * args.clients
    pos = [0] * args.clients
    reconnects = [0]

    def dripper():
        while not stop.is_set():
            for i in range(args.clients):
                try:
                    if socks[i] is None:
                        socks[i] = socket.create_connection(("127.0.0.1", port), timeout=5)
                        pos[i] = 0
                        reconnects[0] += 1
                    socks[i].send(head[pos[i] % len(head): pos[i] % len(head) + 1])
                    pos[i] += 1
                except OSError:
                    try:
                        socks[i].close()
                    except Exception:
                        pass
                    socks[i] = None
            stop.wait(args.interval)

    t = threading.Thread(target=dripper, daemon=True)
    t.start()
    time.sleep(2)
    probes = []
    gen = {}

    def generate():
        t0 = time.time()
        body = json.dumps({"messages": [{"role": "user", "content": "Say something."}], "max_tokens": 16})
        try:
            gen["status"] = request(port, "POST", "/v1/chat/completions", body, timeout=120)[0]
        except OSError as e:
            gen["status"] = str(e)
        gen["s"] = time.time() - t0

    g = None
    t_start = time.time()
    while time.time() - t_start < args.seconds:
        if g is None and time.time() - t_start >= 10:
            g = threading.Thread(target=generate)
            g.start()
        t0 = time.time()
        try:
            st, _ = request(port, "GET", "/health", timeout=5)
        except OSError:
            st = 0
        probes.append((st, time.time() - t0))
        time.sleep(max(0.0, 1.0 - (time.time() - t0)))
    if g:
        g.join(130)
    stop.set()
    t.join(5)
    dropped = metric(port, "tandem_http_slow_clients_dropped_total")
    worst = max(p[1] for p in probes)
    answered = sum(1 for p in probes if p[0] == 200 and p[1] < 1.0)
    print(f"{args.clients} drip clients (1 byte / {args.interval} s) for {args.seconds} s: "
          f"{answered}/{len(probes)} /health probes answered within 1 s, worst {worst * 1000:.0f} ms; "
          f"generation: status {gen.get('status')} in {gen.get('s', 0):.2f} s; "
          f"drip connections opened {reconnects[0]}, tandem_http_slow_clients_dropped_total {dropped:.0f}")
    ok = answered == len(probes) and gen.get("status") == 200
    print("drip storm:", "PASS" if ok else "FAIL")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("storm", choices=["memory", "drip"])
    ap.add_argument("--server", default="build/tandem-server")
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--count", type=int, default=40, help="memory: requests per round")
    ap.add_argument("--mib", type=int, default=10, help="memory: MB of text per request")
    ap.add_argument("--clients", type=int, default=100, help="drip: connections")
    ap.add_argument("--interval", type=float, default=1.5, help="drip: seconds between bytes")
    ap.add_argument("--seconds", type=int, default=30, help="drip: length of the storm")
    ap.add_argument("extra", nargs="*", help="more tandem-server flags (after --)")
    args = ap.parse_args()
    proc, port = start_server(args)
    try:
        ok = storm_memory(args, proc, port) if args.storm == "memory" else storm_drip(args, proc, port)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
