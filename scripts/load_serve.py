"""Load on ``infill serve`` (not a timed test): CLIENTS concurrent clients x REQUESTS requests each of a
2-blank template with the page's fast preset, against a server started here on 127.0.0.1.

Every response must be a 200 whose template and seed are the request's, and whose samples equal those of
the same request sent again alone afterwards (runs are deterministic given the seed): so none is lost or
given to another request. Then the server must still answer. With Playwright and Debian's chromium
installed, also the time from pressing the page's button to the first fillings shown (fast preset).
Writes eval/serve-load.json and eval/serve-load.md.

    python scripts/load_serve.py [--model PATH] [--clients 20] [--requests 5]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from infill.serve.app import FAST  # noqa: E402

TEMPLATES = ["The [MASK] sat on the [MASK].", "She bought a [MASK] and a [MASK] at the market.",
             "My [MASK] likes to [MASK] in the morning.", "The [MASK] of the city was [MASK]."]
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def post(url: str, body: dict, timeout: float = 300) -> tuple[int, dict, float]:
    start = time.perf_counter()
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read()), time.perf_counter() - start
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), time.perf_counter() - start
    except OSError as exc:
        return 0, {"error": str(exc)}, time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_server(model: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "infill", "serve", "--model", model, "--port", str(port)],
                              cwd=ROOT, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"the server exited: {server.stderr.read().strip()}")
        try:
            urllib.request.urlopen(base + "/api/info", timeout=2).read()
            return server, base
        except OSError:
            time.sleep(0.5)
    server.kill()
    sys.exit("the server did not start within 300 s")


def first_fillings(base: str, template: str, tries: int) -> list[float]:
    """Seconds from pressing the page's button to the first fillings shown, per try (fast preset)."""
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=BROWSER_ARGS)
        page = browser.new_page()
        page.goto(base + "/")
        page.wait_for_selector("#method option", state="attached")
        page.fill("#template", template)
        for _ in range(tries):
            page.evaluate("document.getElementById('results').replaceChildren()")
            start = time.perf_counter()
            page.click("#run")
            page.wait_for_selector("ol.fillings li", timeout=60_000)
            times.append(time.perf_counter() - start)
            page.wait_for_selector("#run:not([disabled])")
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT.parent / "shared" / "models" / "infill-dev-minilm-mlm"))
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--page-tries", type=int, default=5)
    args = parser.parse_args()
    server, base = start_server(args.model)
    try:
        post(base + "/api/sample", {"template": TEMPLATES[0], **FAST, "seed": 0})  # warm-up, not counted
        results: list[tuple[dict, int, dict, float]] = []
        lock = threading.Lock()

        def client(c: int) -> None:
            for r in range(args.requests):
                body = {"template": TEMPLATES[(c + r) % len(TEMPLATES)], **FAST, "seed": 1000 * c + r}
                status, response, seconds = post(base + "/api/sample", body)
                with lock:
                    results.append((body, status, response, seconds))

        start = time.perf_counter()
        threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        ok = [(b, r, s) for b, status, r, s in results if status == 200]
        lost = args.clients * args.requests - len(ok)
        mixed = [b for b, r, _ in ok if r.get("template") != b["template"] or r["diagnostics"]["seed"] != b["seed"]]
        recheck = ok[:: max(1, len(ok) // 10)]  # every 10th, sent again alone
        differ = [b for b, r, _ in recheck
                  if post(base + "/api/sample", b)[1].get("samples") != r["samples"]]
        alive = server.poll() is None and post(base + "/api/sample", {"template": TEMPLATES[1], **FAST})[0] == 200
        latencies = [s for _, _, s in ok]
        run_seconds = [r["diagnostics"]["seconds"] for _, r, _ in ok]
        page = None
        if shutil.which("chromium"):
            try:
                page = first_fillings(base, TEMPLATES[0], args.page_tries)
            except ImportError:
                page = None
    finally:
        server.terminate()
        server.wait(30)
    report = {
        "clients": args.clients, "requests_per_client": args.requests, "template_blanks": 2, "preset": FAST,
        "model": args.model, "sent": args.clients * args.requests, "ok": len(ok), "lost": lost,
        "mixed_up": len(mixed), "rechecked": len(recheck), "recheck_differs": len(differ), "alive_after": alive,
        "wall_seconds": round(wall, 2), "latency_seconds": {
            "median": round(statistics.median(latencies), 3), "p95": round(percentile(latencies, 0.95), 3),
            "max": round(max(latencies), 3)},
        "run_seconds_median": round(statistics.median(run_seconds), 3),
        "page_first_fillings_seconds": None if page is None else [round(t, 2) for t in page],
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared), OMP_NUM_THREADS="
                   f"{os.environ.get('OMP_NUM_THREADS', 'unset')}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    (ROOT / "eval" / "serve-load.json").write_text(json.dumps(report, indent=2) + "\n")
    page_line = ("not measured (no chromium or playwright)" if page is None else
                 f"median {statistics.median(page):.2f} s, max {max(page):.2f} s over {len(page)} tries "
                 f"({', '.join(f'{t:.2f}' for t in page)}); target <= 3 s")
    (ROOT / "eval" / "serve-load.md").write_text(f"""# `infill serve` under load

`python scripts/load_serve.py` ({report['date']}; {report['machine']}; model `{Path(args.model).name}`).
{args.clients} concurrent clients x {args.requests} requests each of a 2-blank template with the page's fast
preset ({json.dumps(FAST)}), against a server started on 127.0.0.1 (queue of 32, one run at a time).

| | |
|---|---|
| requests sent / answered 200 | {report['sent']} / {report['ok']} |
| lost | {lost} |
| mixed up (template or seed not the request's) | {len(mixed)} |
| samples differ from the same request sent again alone | {len(differ)} of {len(recheck)} |
| server alive after | {'yes' if alive else 'NO'} |
| latency median / p95 / max | {' / '.join(f"{v:.2f}" for v in report['latency_seconds'].values())} s |
| one run (median, from the diagnostics) | {report['run_seconds_median']:.2f} s |
| wall time for all requests | {report['wall_seconds']:.1f} s |
| first fillings on the page after pressing the button | {page_line} |

Latency is mostly waiting: the runs go one at a time through the queue, so a request waits for the runs
queued before it (at most {args.clients - 1} here). The machine's 2 cores are shared with other jobs, so
the absolute times are noisy.
""")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
