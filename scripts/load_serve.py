"""Load on ``infill serve`` (not a timed test): CLIENTS concurrent clients x REQUESTS requests each, of every
endpoint in turn (a 2-blank template and a span template with an include word through ``/api/sample``, a
rewrite, a score, a rank, all with the page's fast preset) and bad input to each, against a server started
here on 127.0.0.1.

Every good request must be answered 200 with its own content (template, seed, texts or options), and equal
the same request sent again alone afterwards (runs are deterministic given the seed): so none is lost or
given to another request. Every bad one must be answered 4xx with a one-line error. Then the server must
still answer. With Playwright and Debian's chromium installed, also the time from pressing each mode's
button to its first results shown. Writes eval/serve-load/serve-load.json and eval/serve-load/serve-load.md.

    python -m scripts.load_serve [--model PATH] [--clients 20] [--requests 5] [--time-limit 300]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
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

from infill.serve.app import FAST
from scripts.harness import DEV_MODEL, ROOT, cpu_model

TEMPLATES = [
    "The [MASK] sat on the [MASK].",
    "She bought a [MASK] and a [MASK] at the market.",
    "My [MASK] likes to [MASK] in the morning.",
    "The [MASK] of the city was [MASK].",
]
SPANS = [
    ("She was [MASK*?] the garden when it started to rain.", "running"),
    ("After the storm, the [MASK*1-3] was closed for a week.", "bridge"),
]
SENTENCES = ["The old man walked slowly to the market.", "She opened the door and saw a small dog in the garden."]
SCORED = ["the cat sat on the mat .", "the mat sat on the cat .", "cat the on sat mat the ."]
RANKED = ("the [MASK] played a song .", ["pianist", "violinist", "xylophonist", "ice cream"])
BAD = [  # (endpoint, body or raw bytes, expected status): checked before the queue, or by the run itself
    ("sample", {"template": "no blank here"}, 400),
    ("sample", {"template": "a [MASK] day .", "steps": 0}, 400),
    ("sample", {"template": "a [MASK] day .", "forbid": [","]}, 400),
    ("sample", b"{not json", 400),
    ("sample", {"template": "a [MASK] day ." + " x" * 40000}, 413),
    ("rewrite", {"text": "The old man walked.", "change": 2}, 400),
    ("rewrite", {"text": "The [MASK] man walked."}, 400),
    ("score", {"texts": []}, 400),
    ("score", {"texts": ["a cat ."], "mode": "bleu"}, 400),
    ("rank", {"template": "the [MASK] played a [MASK] .", "options": ["a"]}, 400),
    ("rank", {"template": "the [MASK] played .", "options": "pianist,violinist"}, 400),
    ("jobs", {"task": "summarize"}, 400),
]
KINDS = ("sample", "spans", "rewrite", "score", "rank", "bad")
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def post(url: str, body, timeout: float = 600) -> tuple[int, dict, float]:
    start = time.perf_counter()
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read()), time.perf_counter() - start
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), time.perf_counter() - start
    except OSError as exc:
        return 0, {"error": str(exc)}, time.perf_counter() - start


def request_for(c: int, r: int, per_client: int) -> tuple[str, str, object, int]:
    """``(kind, endpoint, body, expected status)`` of client ``c``'s request ``r``."""
    n, seed = c * per_client + r, 1000 * c + r
    kind = KINDS[n % len(KINDS)]
    if kind == "sample":
        return kind, "sample", {"template": TEMPLATES[n % len(TEMPLATES)], **FAST, "seed": seed}, 200
    if kind == "spans":
        template, word = SPANS[n % len(SPANS)]
        return kind, "sample", {"template": template, "include": [word], **FAST, "seed": seed}, 200
    if kind == "rewrite":
        return kind, "rewrite", {"text": SENTENCES[n % len(SENTENCES)], "change": 0.3, **FAST, "seed": seed}, 200
    if kind == "score":
        return kind, "score", {"texts": SCORED[: 1 + n % len(SCORED)], "mode": ("pll", "word-l2r")[n % 2]}, 200
    if kind == "rank":
        return kind, "rank", {"template": RANKED[0], "options": RANKED[1][n % 2 :]}, 200
    return (kind, *BAD[n % len(BAD)])


def own(body: dict, response: dict) -> bool:
    """Whether a 200 answers this request (its template and seed, texts or options), not another one."""
    if "scores" in response:
        return [s["text"] for s in response["scores"]] == body["texts"]
    if "ranked" in response:
        return sorted(r["option"] for r in response["ranked"]) == sorted(body["options"])
    if response.get("diagnostics", {}).get("seed") != body["seed"]:
        return False
    return response["template"] == body["template"] if "template" in body else len(response["samples"]) > 0


def answer(response: dict):
    """What must be equal when the same request is sent again alone."""
    return response.get("samples") or response.get("scores") or response.get("ranked")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_server(model: str, time_limit: float) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "infill",
            "serve",
            "--model",
            model,
            "--port",
            str(port),
            "--time-limit",
            str(time_limit),
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
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


PAGE_MODES = {  # mode: (its tab, what to fill in, its button, its first results)
    "fill": ("fill", {"#template": TEMPLATES[0]}, "#run", "#results ol.fillings li"),
    "rewrite": ("rewrite", {"#rw-text": SENTENCES[0]}, "#rw-run", "#rw-results ol.fillings li"),
    "score": ("score", {}, "#sc-run", "#sc-results .scored"),
    "rank": ("score", {}, "#rk-run", "#rk-results .scored"),
}


def first_results(base: str, tries: int) -> dict[str, list[float]]:
    """Per mode of the page, seconds from pressing its button to its first results shown (fast preset)."""
    from playwright.sync_api import sync_playwright

    times = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=BROWSER_ARGS)
        page = browser.new_page()
        page.goto(base + "/")
        page.wait_for_selector("#method option", state="attached")
        for mode, (tab, fields, button, shown) in PAGE_MODES.items():
            page.click(f"nav button[data-mode={tab}]")
            for selector, value in fields.items():
                page.fill(selector, value)
            times[mode] = []
            for _ in range(tries):
                page.evaluate(f"document.querySelectorAll('{shown}').forEach((e) => e.remove())")
                start = time.perf_counter()
                page.click(button)
                page.wait_for_selector(shown, timeout=120_000)
                times[mode].append(round(time.perf_counter() - start, 2))
                page.wait_for_selector(f"{button}:not([disabled])")
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(DEV_MODEL))
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--page-tries", type=int, default=3)
    parser.add_argument(
        "--time-limit",
        type=float,
        default=300,
        help="the server's --time-limit: every request queued behind the others must fit in it",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "eval" / "serve-load" / "serve-load", help="writes OUT.json and OUT.md"
    )
    args = parser.parse_args()
    server, base = start_server(args.model, args.time_limit)
    try:
        for kind in ("sample", "spans", "rewrite", "score", "rank"):  # warm-up, not counted
            _, endpoint, body, _ = request_for(KINDS.index(kind), 0, 1)
            post(f"{base}/api/{endpoint}", body)
        results: list[tuple[str, str, object, int, int, dict, float]] = []
        lock = threading.Lock()

        def client(c: int) -> None:
            for r in range(args.requests):
                kind, endpoint, body, expected = request_for(c, r, args.requests)
                status, response, seconds = post(f"{base}/api/{endpoint}", body)
                with lock:
                    results.append((kind, endpoint, body, expected, status, response, seconds))

        start = time.perf_counter()
        threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        good = [x for x in results if x[3] == 200]
        bad = [x for x in results if x[3] != 200]
        ok = [x for x in good if x[4] == 200]
        mixed = [x for x in ok if not own(x[2], x[5])]
        refused = [x for x in bad if x[4] == x[3] and "\n" not in x[5].get("error", "\n")]
        recheck = ok[:: max(1, len(ok) // 10)]  # every 10th, sent again alone
        differ = [x for x in recheck if answer(post(f"{base}/api/{x[1]}", x[2])[1]) != answer(x[5])]
        alive = server.poll() is None and post(base + "/api/sample", {"template": TEMPLATES[1], **FAST})[0] == 200
        page = first_results(base, args.page_tries) if shutil.which("chromium") and args.page_tries else None
    except ImportError:
        page = None
    finally:
        server.terminate()
        server.wait(30)
    by_kind = collections.defaultdict(list)
    for kind, _, _, expected, status, _, seconds in results:
        by_kind[kind].append((status == expected, seconds))
    lost = len(good) - len(ok) + len(bad) - len(refused)
    report = {
        "clients": args.clients,
        "requests_per_client": args.requests,
        "preset": FAST,
        "time_limit": args.time_limit,
        "model": Path(args.model).name,
        "sent": len(results),
        "good": len(good),
        "ok": len(ok),
        "bad": len(bad),
        "bad_refused_4xx_one_line": len(refused),
        "lost": lost,
        "mixed_up": len(mixed),
        "rechecked": len(recheck),
        "recheck_differs": len(differ),
        "alive_after": alive,
        "wall_seconds": round(wall, 2),
        "per_kind": {
            kind: {
                "sent": len(v),
                "as_expected": sum(ok for ok, _ in v),
                "latency_median": round(statistics.median(s for _, s in v), 3),
                "latency_max": round(max(s for _, s in v), 3),
            }
            for kind, v in by_kind.items()
        },
        "run_seconds_median": {
            kind: round(statistics.median(x[5]["diagnostics"]["seconds"] for x in ok if x[0] == kind), 3)
            for kind in ("sample", "spans", "rewrite")
        },
        "page_first_results_seconds": page,
        "machine": f"{cpu_model()}, {os.cpu_count()} CPUs (shared), OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    rows = "\n".join(
        f"| {kind} | {v['sent']} | {v['as_expected']} | {v['latency_median']:.2f} / {v['latency_max']:.2f} s |"
        for kind, v in report["per_kind"].items()
    )
    runs = ", ".join(f"{kind} {v:.2f} s" for kind, v in report["run_seconds_median"].items())
    page_lines = (
        "not measured (no chromium or playwright)"
        if page is None
        else "; ".join(f"{mode} median {statistics.median(t):.2f} s (max {max(t):.2f})" for mode, t in page.items())
    )
    args.out.with_suffix(".md").write_text(f"""# `infill serve` under load

`python -m scripts.load_serve` ({report["date"]}; {report["machine"]}; model `{report["model"]}`).
{args.clients} concurrent clients x {args.requests} requests each, taking turns over every endpoint: a 2-blank
template and a span template with an include word (`/api/sample`), a rewrite (`/api/rewrite`), all with
the page's fast preset ({json.dumps(FAST)}); a score of 1-3 sentences (`/api/score`, pll and word-l2r); a rank
of 3-4 options (`/api/rank`); and bad input to every endpoint (a bad template, option, forbid word, JSON,
body size, rewrite, score, rank or job task). The server ran on 127.0.0.1 with a queue of 32, one run at a
time, and `--time-limit {args.time_limit:g}` (a request's wait in the queue counts against it).

| | |
|---|---|
| requests sent (good / bad) | {report["sent"]} ({report["good"]} / {report["bad"]}) |
| good answered 200 | {report["ok"]} of {report["good"]} |
| bad answered 4xx with a one-line error | {report["bad_refused_4xx_one_line"]} of {report["bad"]} |
| lost (a good one not 200, a bad one not its 4xx) | {lost} |
| mixed up (template, seed, texts or options not the request's) | {len(mixed)} |
| answers that differ from the same request sent again alone | {len(differ)} of {len(recheck)} |
| server alive after | {"yes" if alive else "NO"} |
| wall time for all requests | {report["wall_seconds"]:.1f} s |
| one run (median, from the diagnostics) | {runs} |
| first results on the page after pressing the button ({args.page_tries} tries per mode) | {page_lines} |

| kind | sent | answered as expected | latency median / max |
|---|---|---|---|
{rows}

Latency is mostly waiting: the runs go one at a time through the queue, so a request waits for the runs
queued before it (at most {args.clients - 1} here); bad input checked before the queue (syntax, options) is
answered at once, bad input only the model's tokenizer can judge (a forbid word, a rewrite of a template)
waits its turn like a run. The machine's 2 cores are shared with other jobs, so the absolute times are noisy.
""")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
