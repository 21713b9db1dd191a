"""``infill serve``: the JSON API over a tiny random BERT on 127.0.0.1, and the run queue on its own."""
from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

import pytest

pytest.importorskip("starlette", reason="infill serve needs the [serve] extra (starlette, uvicorn)")
import uvicorn  # noqa: E402
from conftest import tiny_bert  # noqa: E402

from infill import Infiller  # noqa: E402
from infill.cli import main  # noqa: E402
from infill.serve import create_app  # noqa: E402
from infill.serve.queue import QueueFull, RunQueue, Stopped  # noqa: E402

FAST = {"num_samples": 3, "steps": 2, "top": 2, "seed": 5}


@contextmanager
def running(app):
    """``app`` served by uvicorn in a thread on a free port of 127.0.0.1; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def request(url: str, body=None, method: str = None, raw: bytes = None) -> tuple[int, dict]:
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def started(job):
    while job.state == "queued":
        time.sleep(0.005)
    return job


@pytest.fixture(scope="module")
def infiller(bert_tokenizer):
    return Infiller(tiny_bert(), tokenizer=bert_tokenizer)


@pytest.fixture(scope="module")
def url(infiller):
    with running(create_app(infiller, queue_size=4, time_limit=20, max_body=2000)) as base:
        yield base


def _without_timing(result: dict) -> dict:
    return {**result, "diagnostics": {k: v for k, v in result["diagnostics"].items() if k != "seconds"}}


def test_sample_returns_what_the_api_gives(url, infiller):
    template = "the [MASK] sat on the [MASK] ."
    status, got = request(url + "/api/sample", {"template": template, "sampler": "gibbs", **FAST})
    assert status == 200
    want = infiller.sample(template, "gibbs", **FAST).to_dict()
    assert _without_timing(got) == json.loads(json.dumps(_without_timing(want)))
    assert set(got) == {"template", "samples", "diagnostics", "marginals"}
    assert len(got["marginals"]) == 2 and got["samples"][0]["fills"]


def test_jsonl_keys_and_a_baseline(url):
    status, got = request(url + "/api/sample", {"template": "a [MASK] .", "sampler": "left-to-right",
                                                "num-samples": 2, "seed": 1})
    assert status == 200 and got["diagnostics"]["sampler"] == "left-to-right"
    assert got["diagnostics"]["num_samples"] == 2 and len(got["samples"]) == 2


@pytest.mark.parametrize("body, message", [
    ({"template": "no blank here"}, "template has no [MASK] blank"),
    ({"template": "a [MASK] .", "steps": 0}, "steps must be a positive integer, got 0"),
    ({"template": "a [MASK] .", "sampler": "nope"}, "unknown sampler 'nope'"),
    ({"template": "a [MASK] .", "step_size": "big"}, "step_size"),
    ({"template": "a [MASK] .", "options": 5}, "bad run options"),
    ({"steps": 3}, "needs a \"template\" string"),
    ({"template": "a [MASK] .", "num_samples": 100000}, "at most 256 samples per request"),
    ([1, 2], "must be a JSON object"),
])
def test_bad_input_is_400_with_one_line(url, body, message):
    status, got = request(url + "/api/sample", body)
    assert status == 400 and message in got["error"] and "\n" not in got["error"]


def test_bad_json_and_large_bodies(url):
    assert request(url + "/api/sample", raw=b"{not json")[0] == 400
    status, got = request(url + "/api/sample", {"template": "a [MASK] ." + " x" * 2000})
    assert status == 413 and "limit of 2000" in got["error"]
    status, got = request(url + "/api/nothing")
    assert status == 404 and "error" in got


def test_jobs_report_progress_and_a_trace(url):
    status, created = request(url + "/api/jobs", {"template": "the [MASK] sat [MASK] .", "num_samples": 3,
                                                  "steps": 4, "top": 2, "seed": 2})
    assert status == 202
    deadline = time.monotonic() + 30
    while "result" not in (job := request(f"{url}/api/jobs/{created['id']}")[1]):
        assert "error" not in job and time.monotonic() < deadline
        time.sleep(0.05)
    assert job["state"] == "done" and job["progress"] == [4, 4]
    trace = job["result"]["trace"]
    assert len(trace["energies"]) == 3 and len(trace["energies"][0]) == 4  # chains x steps
    assert all(0 <= a <= 1 for chain in trace["accepted"] for a in chain)
    assert request(url + "/api/jobs/999999")[0] == 404


def test_cancel_a_running_job(url):
    _, created = request(url + "/api/jobs", {"template": "the [MASK] sat .", "steps": 100000, "num_samples": 2})
    job_url = f"{url}/api/jobs/{created['id']}"
    while request(job_url)[1]["progress"][0] < 1:
        time.sleep(0.02)
    assert request(job_url, method="DELETE")[0] == 200
    while "error" not in (job := request(job_url)[1]):
        time.sleep(0.02)
    assert job["state"] == "cancelled" and job["status"] == 409 and "cancelled" in job["error"]


def test_time_limit_full_queue_and_internal_errors(infiller, monkeypatch):
    app = create_app(infiller, queue_size=1, time_limit=0.5)
    with running(app) as base:
        status, got = request(base + "/api/sample", {"template": "a [MASK] .", "steps": 100000, "num_samples": 2})
        assert status == 503 and "time limit of 0.5 s" in got["error"]
        gate = threading.Event()
        app.state.queue.time_limit = 30
        started(app.state.queue.submit(lambda step: gate.wait(10)))  # runs
        waiting = app.state.queue.submit(lambda step: None)  # waits: the queue is full
        status, got = request(base + "/api/sample", {"template": "a [MASK] ."})
        assert status == 503 and "busy" in got["error"]
        gate.set()
        waiting.future.result(10)
        monkeypatch.setattr(infiller, "run", lambda *a, **k: 1 / 0)
        status, got = request(base + "/api/sample", {"template": "a [MASK] ."})
        assert status == 500 and got["error"] == "internal error (ZeroDivisionError): division by zero"
        monkeypatch.undo()
        assert request(base + "/api/sample", {"template": "a [MASK] .", **FAST})[0] == 200  # still serving


def test_page_and_info(url):
    with urllib.request.urlopen(url + "/", timeout=10) as response:
        page = response.read().decode()
    assert 'id="template"' in page and "/api/jobs" in page
    status, info = request(url + "/api/info")
    assert status == 200 and info["defaults"]["method"] == "gibbs" and "left-to-right" in info["methods"]
    assert info["fast"]["steps"] < info["defaults"]["steps"]


def test_queue_runs_one_at_a_time_in_order():
    queue, seen, busy = RunQueue(size=8, time_limit=10), [], []

    def run(n):
        def go(step):
            busy.append(n)
            assert len(busy) == 1  # never two at once
            time.sleep(0.01)
            seen.append(n)
            busy.remove(n)
            return n
        return go

    jobs = [queue.submit(run(n)) for n in range(6)]
    assert [job.future.result(5) for job in jobs] == list(range(6)) == seen
    queue.close()


def test_queue_full_cancel_while_waiting_and_deadline():
    queue = RunQueue(size=1, time_limit=0.2)
    gate = threading.Event()
    first = started(queue.submit(lambda step: gate.wait(5)))
    waiting = queue.submit(lambda step: "never")
    with pytest.raises(QueueFull):
        queue.submit(lambda step: None)
    queue.cancel(waiting)
    with pytest.raises(Stopped, match="cancelled"):
        waiting.future.result(1)

    def spin(step):
        while True:
            step(1, 2)

    gate.set()
    first.future.result(5)
    slow = queue.submit(spin)
    with pytest.raises(Stopped, match="time limit"):
        slow.future.result(5)
    assert slow.state == "failed"
    queue.close()


@pytest.mark.parametrize("argv, message", [
    (["serve", "--port", "70000"], "--port must be between 1 and 65535"),
    (["serve", "--host", "no.such.host.invalid"], "unknown host"),
    (["serve", "--queue-size", "0"], "--queue-size must be a positive integer"),
    (["serve", "--time-limit", "0"], "--time-limit must be positive"),
])
def test_serve_cli_bad_input_before_the_model_loads(argv, message, capsys, monkeypatch):
    from infill import models

    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("the model was loaded"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_serve_cli_port_in_use(capsys, monkeypatch):
    from infill import models

    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("the model was loaded"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    assert f"port {port} on 127.0.0.1 is in use" in capsys.readouterr().err
