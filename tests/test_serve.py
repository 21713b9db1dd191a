"""``infill serve``: the JSON API over a tiny random BERT on 127.0.0.1 (every endpoint answers what the
Python API gives, and bad input with a 400 of one line), and the run queue on its own."""

from __future__ import annotations

import json
import logging
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
from infill.constraints.rewrite import source_bleu  # noqa: E402
from infill.pipeline.config import STEPS  # noqa: E402
from infill.serve import create_app, tasks  # noqa: E402
from infill.serve.app import shown_name  # noqa: E402
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
    status, got = request(
        url + "/api/sample", {"template": "a [MASK] .", "sampler": "left-to-right", "num-samples": 2, "seed": 1}
    )
    assert status == 200 and got["diagnostics"]["sampler"] == "left-to-right"
    assert got["diagnostics"]["num_samples"] == 2 and len(got["samples"]) == 2


def test_rewrite_returns_what_the_api_gives(url, infiller):
    text = "the old man walked to the market ."
    status, got = request(url + "/api/rewrite", {"text": text, "change": 0.3, **FAST})
    assert status == 200 and got["diagnostics"]["sampler"] == "gibbs-mh"  # infill rewrite's default
    want = infiller.rewrite(text, 0.3, **FAST).to_dict()
    bleu, signature = source_bleu([s["text"] for s in want["samples"]], text)  # as infill rewrite --json adds
    assert [s.pop("source_bleu") for s in got["samples"]] == bleu and got.pop("source_bleu_signature") == signature
    assert _without_timing(got) == json.loads(json.dumps(_without_timing(want)))
    status, got = request(url + "/api/rewrite", {"text": text, "change": 0.3, "num_samples": 6, "steps": 2})
    assert status == 200 and len(got["samples"]) <= 5  # infill rewrite's default --top 5


def test_score_and_rank_return_what_the_api_gives(url, infiller):
    texts = ["the cat sat on the mat .", "a dog ran ."]
    for mode in ("pll", "word-l2r"):
        status, got = request(url + "/api/score", {"texts": texts, "mode": mode})
        assert status == 200
        want = infiller.score(texts, mode)
        assert [s["text"] for s in got["scores"]] == texts and {s["mode"] for s in got["scores"]} == {mode}
        assert [s["score"] for s in got["scores"]] == pytest.approx([w.total for w in want])
        assert [[t["token"] for t in s["tokens"]] for s in got["scores"]] == [[t for t, _ in w.tokens] for w in want]
    options = ["cat", "dog", "ice cream"]
    status, got = request(url + "/api/rank", {"template": "the [MASK] sat .", "options": options})
    want = infiller.rank("the [MASK] sat .", options)
    assert status == 200 and [r["option"] for r in got["ranked"]] == [r.option for r in want]
    assert [r["score"] for r in got["ranked"]] == pytest.approx([r.score.total for r in want])
    assert got["ranked"][0]["text"] == want[0].text and got["ranked"][0]["mode"] == "pll"


def test_augment_returns_what_the_api_gives_a_few_sentences_at_a_time(url, infiller, monkeypatch):
    texts = ["the old man walked to the market .", "a dog ran in the park .", "Meet Anna in New York ."]
    options = {"n": 3, "change": 0.3, "seed": 4, "protect": ["new york"]}
    monkeypatch.setattr(tasks, "AUGMENT_CHUNK", 2)  # two runs: a sentence gets the same variants in any batch
    status, got = request(url + "/api/augment", {"texts": texts, **options})
    assert status == 200, got
    want = [variants.to_dict() for variants in infiller.augment(texts, **options)]
    assert got == {"augmented": json.loads(json.dumps(want))}
    assert [record["source"] for record in got["augmented"]] == texts
    assert all(record["variants"] and record["variants"][0]["edits"] for record in got["augmented"])
    assert all("New York" in v["text"] for v in got["augmented"][2]["variants"])
    status, one = request(url + "/api/augment", {"text": texts[0], "n": 3, "min-words": 2, "seed": 4})
    assert status == 200 and one["augmented"] == [infiller.augment(texts[0], n=3, min_words=2, seed=4).to_dict()]


@pytest.mark.parametrize(
    "options",
    [
        {"action": "insert", "pll": False},
        {"action": "delete"},
        {"action": "substitute", "keep_close": 2.5},
    ],
)
def test_augment_takes_action_keep_close_and_pll_as_the_api_does(url, infiller, options):
    texts = ["the old man walked to the market .", "a dog ran in the park ."]
    status, got = request(url + "/api/augment", {"texts": texts, "n": 3, "change": 0.3, "seed": 4, **options})
    assert status == 200, got
    want = [variants.to_dict() for variants in infiller.augment(texts, n=3, change=0.3, seed=4, **options)]
    assert got == {"augmented": json.loads(json.dumps(want))}
    edits = [e for record in got["augmented"] for v in record["variants"] for e in v["edits"]]
    assert edits and all((e["old"] == "") == (options["action"] == "insert") for e in edits)
    assert all((e["new"] == "") == (options["action"] == "delete") for e in edits)


@pytest.mark.parametrize(
    "body, message",
    [
        ({"texts": []}, "give at least one of the texts"),
        ({"texts": ["a cat sat .", " "]}, "sentence 2 is empty"),
        ({"text": ""}, "sentence 1 is empty"),
        ({"texts": "a cat sat ."}, "texts must be a list of strings"),
        ({"text": "a cat .", "texts": ["a dog ."]}, 'give "text" (one sentence) or "texts" (a list), not both'),
        ({"texts": ["a cat sat ."], "n": 0}, "n must be a positive integer, got 0"),
        ({"texts": ["a cat sat ."], "n": 65}, "at most 64 variants per sentence, got 65"),
        ({"texts": ["a cat sat ."], "change": 1.5}, "change must be a share strictly between 0 and 1, got 1.5"),
        ({"texts": ["a cat sat ."], "change": 0}, "change must be a share strictly between 0 and 1"),
        ({"texts": ["a cat sat ."], "sampler": "gibbs"}, "augment fills with one-pass draws"),
        ({"texts": ["a cat sat ."], "protect": "cat"}, "protect must be a list"),
        ({"texts": ["a cat sat ."], "protect": ["(cat"]}, "is not a regular expression"),
        ({"texts": ["a cat sat ."], "top": 3}, "unknown key 'top'"),
        ({"texts": ["a cat sat ."], "action": "swap"}, "action must be one of substitute, insert, delete, got 'swap'"),
        ({"texts": ["a cat sat ."], "keep_close": -1}, "keep_close must be a number >= 0, got -1"),
        ({"texts": ["a cat sat ."], "keep_close": "near"}, "keep_close must be a number >= 0"),
        ({"texts": ["a cat sat ."], "action": "delete", "keep_close": 1}, "it needs action substitute"),
        ({"texts": ["a cat sat ."], "classifier": "org/sst2"}, "use infill augment --classifier or Infiller.augment"),
        ({"texts": ["a cat sat ."], "label": 1}, "use infill augment --classifier or Infiller.augment"),
        ({"texts": ["a cat sat ."], "pll": "no"}, "pll must be true or false, got 'no'"),
        ({"texts": ["a cat sat ."], "pll": 0}, "pll must be true or false, got 0"),
        ({"texts": ["a cat sat .", "42 1999 2000"]}, "sentence 2: nothing to change in '42 1999 2000'"),  # worker
        ({"texts": ["a [MASK] sat ."]}, "has a [MASK] blank"),  # in the worker
    ],
)
def test_bad_augment_input_is_400_with_one_line(url, body, message):
    status, got = request(url + "/api/augment", body)
    assert status == 400 and message in got["error"] and "\n" not in got["error"], got


def test_augment_action_keep_close_pll_and_classifier_are_checked_before_the_run(url, infiller, monkeypatch):
    def run(*args, **options):
        raise AssertionError("the run started")

    monkeypatch.setattr(infiller, "augment", run)
    bad = [
        {"action": "swap"},
        {"keep_close": -1},
        {"action": "insert", "keep_close": 1},
        {"pll": 1},
        {"classifier": "x"},
    ]
    for options in bad:
        status, got = request(url + "/api/augment", {"texts": ["a cat sat ."], **options})
        assert status == 400 and "the run started" not in got["error"], (options, got)


def test_augment_numbers_a_refused_sentence_in_the_whole_request(url, monkeypatch):
    monkeypatch.setattr(tasks, "AUGMENT_CHUNK", 2)
    status, got = request(url + "/api/augment", {"texts": ["a cat sat .", "a dog ran .", "42 1999 2000"]})
    assert status == 400 and got["error"].startswith("sentence 3: nothing to change in '42 1999 2000'"), got


@pytest.mark.parametrize(
    "options",
    [
        {"template": "the [MASK*?] sat .", "include": ["cat"]},
        {"template": "the [MASK*0-2] sat on [MASK] .", "span_method": "per-length"},
        {"template": "the [MASK] sat on the [MASK*2] .", "blank_unit": "word", "forbid": ["dog"]},
        {"template": "the [MASK] sat on the [MASK] .", "include": ["cat"], "sampler": "gibbs-mh"},
    ],
)
def test_sample_takes_include_spans_and_blank_unit_as_the_api_does(url, infiller, options):
    status, got = request(url + "/api/sample", {**options, **FAST})
    assert status == 200, got
    template, rest = options["template"], {k: v for k, v in options.items() if k != "template"}
    want = infiller.sample(template, **FAST, **rest).to_dict()
    assert _without_timing(got) == json.loads(json.dumps(_without_timing(want)))
    if "include" in options:
        assert all("cat" in s["fills"] or "cat" in " ".join(s["fills"]).split() for s in got["samples"])


def wait_for(url: str, job_id: str) -> dict:
    deadline = time.monotonic() + 30
    while "result" not in (job := request(f"{url}/api/jobs/{job_id}")[1]):
        assert "error" not in job and time.monotonic() < deadline, job
        time.sleep(0.05)
    return job


def test_jobs_of_every_task_and_the_lengths_of_span_fills(url):
    _, created = request(
        url + "/api/jobs", {"task": "sample", "template": "the [MASK*?] sat .", "num_samples": 4, "steps": 3, "seed": 1}
    )
    result = wait_for(url, created["id"])["result"]
    (lengths,) = result["lengths"]
    assert [entry["words"] for entry in lengths] == [1, 2, 3, 4]  # every length [MASK*?] allows
    words = [len(s["fills"][0].split()) for s in result["samples"]]
    assert [entry["share"] for entry in lengths] == [words.count(n) / len(words) for n in (1, 2, 3, 4)]
    _, created = request(url + "/api/jobs", {"template": "the [MASK] sat on [MASK*1-2] .", **FAST})
    assert wait_for(url, created["id"])["result"]["lengths"][0] is None  # a blank of fixed length
    _, created = request(
        url + "/api/jobs", {"task": "rewrite", "text": "the cat sat on the mat .", "change": 0.5, **FAST}
    )
    result = wait_for(url, created["id"])["result"]
    assert len(result["trace"]["energies"]) == 3 and "lengths" not in result and result["samples"]
    _, created = request(url + "/api/jobs", {"task": "rank", "template": "a [MASK] .", "options": ["cat", "dog"]})
    assert len(wait_for(url, created["id"])["result"]["ranked"]) == 2
    _, created = request(url + "/api/jobs", {"task": "score", "texts": ["a cat ."]})
    assert len(wait_for(url, created["id"])["result"]["scores"]) == 1
    _, created = request(url + "/api/jobs", {"task": "augment", "texts": ["a cat sat .", "a dog ran ."], "n": 2})
    assert [len(r["variants"]) for r in wait_for(url, created["id"])["result"]["augmented"]] == [2, 2]


@pytest.mark.parametrize(
    "path, body, message",
    [
        ("rewrite", {"change": 0.3}, 'needs a "text" string'),
        ("rewrite", {"text": "a cat .", "change": 1.5}, "change must be a fraction strictly between 0 and 1"),
        ("rewrite", {"text": "a cat .", "change": "much"}, "change must be a fraction"),
        ("rewrite", {"text": "  ", "change": 0.3}, "give a sentence to rewrite"),
        ("rewrite", {"text": "a cat .", "sampler": "left-to-right"}, "rewrite needs an MCMC sampler"),
        ("rewrite", {"text": "a cat .", "steps": 0}, "steps must be a positive integer"),
        ("rewrite", {"text": "a [MASK] cat ."}, "has a [MASK]"),  # found in the worker, by Infiller.rewrite
        ("score", {"texts": "a cat ."}, "texts must be a list of strings"),
        ("score", {"texts": []}, "give at least one of the texts"),
        ("score", {"texts": ["a cat .", " "]}, "sentence 2 is empty"),
        ("score", {"texts": ["a cat ."], "mode": "bleu"}, "scoring mode must be one of pll, word-l2r"),
        ("score", {"text": ["a cat ."]}, "texts must be a list of strings"),
        ("score", {"texts": ["a cat ."], "top": 3}, "unknown key 'top'"),
        ("rank", {"options": ["a"]}, 'needs a "template" string'),
        ("rank", {"template": "a [MASK] [MASK] .", "options": ["a"]}, "exactly one [MASK] blank, got 2"),
        ("rank", {"template": "a [MASK] .", "options": "cat,dog"}, "options must be a list of strings"),
        ("rank", {"template": "a [MASK] .", "options": ["cat", ""]}, "an option must be a non-empty string"),
        ("sample", {"template": "no blank here"}, "template has no [MASK] blank"),
        ("sample", {"template": "a [MASK*5-2] ."}, "needs M <= N"),
        ("sample", {"template": "a [MASK] .", "include": "cat"}, "include must be a list of words"),
        ("sample", {"template": "a [MASK] .", "blank_unit": "line"}, "blank unit must be 'token' or 'word'"),
        ("sample", {"template": "a [MASK*?] .", "sampler": "left-to-right"}, "has word blanks"),  # in the worker
        ("sample", {"template": "a [MASK] .", "forbid": [","]}, "cannot forbid ','"),  # in the worker
        (
            "jobs",
            {"task": "summarize", "template": "a [MASK] ."},
            "task must be one of sample, rewrite, score, rank, augment",
        ),
        ("jobs", {"task": "rewrite", "text": "a cat .", "change": 2}, "change must be a fraction"),
    ],
)
def test_bad_input_to_every_endpoint_is_400_with_one_line(url, path, body, message):
    status, got = request(f"{url}/api/{path}", body)
    assert status == 400 and message in got["error"] and "\n" not in got["error"], got


def test_the_page_names_the_model_without_a_machine_path(tiny_model_dir):
    assert shown_name(str(tiny_model_dir)) == tiny_model_dir.name and shown_name("org/bert-x") == "org/bert-x"
    assert shown_name(str(tiny_model_dir) + "/") == tiny_model_dir.name


@pytest.mark.parametrize(
    "body, message",
    [
        ({"template": "no blank here"}, "template has no [MASK] blank"),
        ({"template": "a [MASK] .", "steps": 0}, "steps must be a positive integer, got 0"),
        ({"template": "a [MASK] .", "sampler": "nope"}, "unknown sampler 'nope'"),
        ({"template": "a [MASK] .", "step_size": "big"}, "step_size"),
        ({"template": "a [MASK] .", "options": 5}, "bad run options"),
        ({"steps": 3}, 'needs a "template" string'),
        ({"template": "a [MASK] .", "num_samples": 100000}, "at most 256 samples per request"),
        ([1, 2], "must be a JSON object"),
    ],
)
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
    status, created = request(
        url + "/api/jobs",
        {"template": "the [MASK] sat [MASK] .", "sampler": "gibbs", "num_samples": 3, "steps": 4, "top": 2, "seed": 2},
    )
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
    _, created = request(
        url + "/api/jobs", {"template": "the [MASK] sat .", "sampler": "gibbs", "steps": 100000, "num_samples": 2}
    )
    job_url = f"{url}/api/jobs/{created['id']}"
    while request(job_url)[1]["progress"][0] < 1:
        time.sleep(0.02)
    assert request(job_url, method="DELETE")[0] == 200
    while "error" not in (job := request(job_url)[1]):
        time.sleep(0.02)
    assert job["state"] == "cancelled" and job["status"] == 409 and "cancelled" in job["error"]


def test_time_limit_full_queue_and_internal_errors(infiller, monkeypatch, caplog):
    app = create_app(infiller, queue_size=1, time_limit=0.5)
    with running(app) as base:
        status, got = request(
            base + "/api/sample", {"template": "a [MASK] .", "sampler": "gibbs", "steps": 100000, "num_samples": 2}
        )
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
        caplog.clear()
        _, created = request(base + "/api/jobs", {"template": "a [MASK] ."})
        job = app.state.queue.get(created["id"])
        job.future.exception(10)
        for _ in range(3):  # polled three times, logged once
            status, got = request(f"{base}/api/jobs/{created['id']}")
            assert got["status"] == 500 and "ZeroDivisionError" in got["error"]
        assert [r.getMessage() for r in caplog.records] == [f"run {created['id']} failed"]
        monkeypatch.undo()
        assert request(base + "/api/sample", {"template": "a [MASK] .", **FAST})[0] == 200  # still serving


def test_a_run_past_the_time_limit_is_a_503_and_one_log_line(infiller, caplog, capfd):
    with caplog.at_level(logging.WARNING, logger="infill.serve"), running(create_app(infiller, time_limit=0.5)) as base:
        status, got = request(
            base + "/api/sample", {"template": "a [MASK] .", "sampler": "gibbs", "steps": 100000, "num_samples": 2}
        )
    assert status == 503 and "time limit of 0.5 s" in got["error"] and "infill serve --time-limit" in got["error"]
    assert len(got["error"].splitlines()) == 1
    logged = caplog.text + capfd.readouterr().err
    assert "Traceback" not in logged and "Exception in ASGI application" not in logged
    assert [r.getMessage() for r in caplog.records if "time limit" in r.getMessage()] == [
        next(r.getMessage() for r in caplog.records if "past the time limit of 0.5 s" in r.getMessage())
    ]


def test_page_and_info(url):
    with urllib.request.urlopen(url + "/", timeout=10) as response:
        page = response.read().decode()
    assert 'id="template"' in page and 'src="/static/page.js"' in page
    with urllib.request.urlopen(url + "/static/page.js", timeout=10) as response:
        assert "/api/jobs" in response.read().decode()
    status, info = request(url + "/api/info")
    assert status == 200 and info["defaults"]["method"] == "auto"
    assert "auto" in info["methods"] and "left-to-right" in info["methods"]
    assert info["fast"]["steps"] < STEPS and info["defaults"]["steps"] is None  # auto: until its budget is spent
    assert info["rewrite"]["sampler"] == "gibbs-mh"
    assert set(info["examples"]) == {"fill", "rewrite", "score", "rank", "augment"}
    assert info["augment"] == {**tasks.AUGMENT_DEFAULTS, "sampler": "independent"}


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


@pytest.mark.parametrize(
    "argv, message",
    [
        (["serve", "--port", "70000"], "--port must be between 1 and 65535"),
        (["serve", "--host", "no.such.host.invalid"], "unknown host"),
        (["serve", "--queue-size", "0"], "--queue-size must be a positive integer"),
        (["serve", "--time-limit", "0"], "--time-limit must be positive"),
    ],
)
def test_serve_cli_bad_input_before_the_model_loads(argv, message, capsys, monkeypatch):
    from infill.lm import models

    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("the model was loaded"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_serve_cli_port_in_use(capsys, monkeypatch):
    from infill.lm import models

    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("the model was loaded"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    assert f"port {port} on 127.0.0.1 is in use" in capsys.readouterr().err
