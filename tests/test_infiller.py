"""The Python API on a tiny random BERT saved as a checkpoint, and a couple of real runs on the dev MLM."""

import math

import pytest
import torch

from infill import Infiller, InfillResult
from infill.energies.base import value_and_grad
from infill.energies.masked_lm import MaskedLMEnergy
from infill.energies.tempered import Tempered
from infill.errors import InfillError
from infill.lm import mlm_draws
from infill.pipeline.config import SPAN_TEMPERATURE, RunConfig

TEMPLATE = "The [MASK] sat on the [MASK*2]."


@pytest.fixture(scope="module")
def infiller(tiny_model_dir):
    return Infiller(model=str(tiny_model_dir))


def test_result_structure(infiller):
    result = infiller.sample(TEMPLATE, sampler="dmala", num_samples=4, steps=3, seed=0, init="uniform")
    assert isinstance(result, InfillResult) and result.template == TEMPLATE
    assert len(result.samples) == 4 and result.texts == [s.text for s in result.samples]
    for chain, s in enumerate(result.samples):
        assert s.chain == chain and len(s.fills) == 2 and len(s.fills[1].split()) == 2
        assert s.text == f"The {s.fills[0]} sat on the {s.fills[1]}."
        assert s.tokens[0] == "the" and s.tokens[2:5] == ["sat", "on", "the"] and len(s.tokens) == 8
        assert not any(tok.startswith("##") for tok in s.tokens) and math.isfinite(s.energy)
    d = result.diagnostics
    assert (d.sampler, d.steps, d.num_samples, d.seed, d.evaluations) == ("dmala", 3, 4, 0, 4)
    assert (d.init, d.temperature, d.forwards, d.candidates) == ("uniform", 1.0, 0, 4)
    assert d.seconds > 0 and "step_size" in d.hyperparameters
    assert result.trace.samples.shape == (3, 4, 3)


def test_the_default_temperature_depends_on_the_blanks():
    default, given = RunConfig(), RunConfig(temperature=0.7)
    assert default.temperature is None and (default.token_temperature, default.span_temperature) == (1.0, 0.5)
    assert (given.token_temperature, given.span_temperature) == (0.7, 0.7)
    assert default.signature()["temperature"] == 1.0 and "span_temperature" not in default.signature()
    assert RunConfig(blank_unit="word").signature()["span_temperature"] == 0.5
    with pytest.raises(InfillError, match="anneal_from .* must be above the temperature"):
        RunConfig(method="gibbs", anneal_from=0.9)


def test_energy_is_the_pll_of_the_final_state(infiller):
    result = infiller.sample(TEMPLATE, num_samples=3, steps=2, seed=1, sampler="gibbs-mh")
    t = infiller.parse(TEMPLATE)
    categories = infiller.category_ids()
    mask = infiller.tokenizer.mask_token_id
    energy = MaskedLMEnergy(infiller.model, t.input_ids, t.blank_positions, categories, mask)
    x = torch.searchsorted(categories, torch.tensor([s.token_ids for s in result.samples])[:, t.blank_positions])
    expected = energy(torch.nn.functional.one_hot(x, len(categories)).float())
    assert torch.allclose(torch.tensor([s.energy for s in result.samples]), expected, atol=1e-4)


def test_seed_determinism(infiller):
    a = infiller.sample(TEMPLATE, num_samples=3, steps=2, seed=7)
    b = infiller.sample(TEMPLATE, num_samples=3, steps=2, seed=7)
    c = infiller.sample(TEMPLATE, num_samples=3, steps=2, seed=8)
    assert a.texts == b.texts and [s.energy for s in a.samples] == [s.energy for s in b.samples]
    assert a.texts != c.texts
    assert infiller.sample(TEMPLATE, num_samples=2, steps=1).diagnostics.seed is not None


def test_top_keeps_distinct_best_final_states(infiller):
    full = infiller.sample("A [MASK] day.", num_samples=12, steps=2, seed=3, sampler="gibbs")
    top = infiller.sample("A [MASK] day.", num_samples=12, steps=2, seed=3, sampler="gibbs", top=4, decode="final")
    distinct = {}
    for s in sorted(full.samples, key=lambda s: -s.energy):
        distinct.setdefault(tuple(s.fills), s)
    assert [s.text for s in top.samples] == [s.text for s in list(distinct.values())[:4]]
    energies = [s.energy for s in top.samples]
    assert energies == sorted(energies, reverse=True) and len(set(top.texts)) == len(top.texts)


def test_forbid_and_subwords(infiller):
    vocab = infiller.tokenizer.get_vocab()
    default = infiller.category_ids()
    assert vocab["the"] in default and vocab["##ing"] not in default
    assert vocab["the"] not in infiller.category_ids(forbid=["The"])
    assert vocab["the"] not in infiller.category_ids(forbid=["the"]) and vocab["t"] in infiller.category_ids(
        forbid=["the"]
    )
    assert vocab["##ing"] in infiller.category_ids(allow_subwords=True)
    result = infiller.sample("[MASK] and [MASK].", num_samples=4, steps=2, seed=0, forbid=["the", "a"])
    assert not {"the", "a"} & {f for s in result.samples for f in s.fills}


def test_a_batch_gives_each_template_what_a_single_call_gives(infiller):
    templates = ["the [MASK] sat on the [MASK] .", "I [MASK] it.", "a [MASK] ran to my [MASK] !", "I [MASK] it."]
    for settings in (
        {"sampler": "gibbs", "num_samples": 3, "steps": 2},
        {"top": 3},
        {"top": 3, "include": ["cat"]},
        {"sampler": "confident-first", "top": 2, "budget": 40},
    ):
        batch = infiller.sample_many(templates, seed=0, **settings)
        assert [r.template for r in batch] == templates
        for template, result in zip(templates, batch):
            alone = infiller.sample(template, seed=0, **settings)
            assert result.texts == alone.texts and [s.energy for s in result.samples] == [
                s.energy for s in alone.samples
            ]
            assert result.diagnostics.encoder_sequences == alone.diagnostics.encoder_sequences


def test_templates_of_one_length_each_get_what_they_get_alone(infiller):
    templates = [  # one length; one-pass draws and chains of two sizes in one request
        "the [MASK] sat on the [MASK] .",
        "the cat sat on the [MASK] .",
        "a [MASK] ran to my [MASK] !",
        "[MASK] [MASK] sat on the [MASK] .",
    ]
    assert len({infiller.parse(t).length for t in templates}) == 1
    settings = {"num_samples": 4, "steps": 3}
    alone = [infiller.sample(t, seed=1, **settings) for t in templates]
    for one, result in zip(alone, infiller.sample_many(templates, seed=1, **settings)):
        assert result.texts == one.texts and [s.energy for s in result.samples] == [s.energy for s in one.samples]
        assert result.diagnostics.encoder_sequences == one.diagnostics.encoder_sequences


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"steps": 0}, "steps must be a positive integer"),
        ({"num_samples": -1}, "num_samples must be a positive integer"),
        ({"num_samples": 2.5}, "num_samples must be a positive integer"),
        ({"top": 0}, "top must be a positive integer"),
        ({"num_samples": 3, "top": 4, "decode": "final"}, r"top \(4\) cannot exceed num_samples \(3\)"),
        ({"sampler": "nope"}, "unknown sampler 'nope'"),
        ({"sampler": "dmala", "bogus": 1}, "unknown key 'bogus'"),
        ({"sampler": "gibbs", "preconditioner": [1.0]}, "'gibbs' has no option 'preconditioner'"),
        ({"temperature": 1e-39}, "temperature must be at least 1e-30"),
        ({"sampler": "dmala", "step_size": -1.0}, "step_size must be positive"),
        ({"sampler": "dmala", "step_size": math.inf}, "step_size must be a finite number"),
        ({"sampler": "dmala", "step_size": "abc"}, "step_size must be a finite number, got 'abc'"),
        ({"sampler": "dmala", "adapt_steps": 1.5}, "adapt_steps must be 0 or more"),
        ({"sampler": "argmax", "steps": None, "step_size": 0.1}, "'argmax' has no option 'step_size'"),
        # a one-pass method takes no chain settings (argmax and the search no temperature): refused, not dropped
        ({"sampler": "argmax"}, "argmax is a one-pass method: it takes no steps; drop it"),
        ({"sampler": "smc", "steps": None, "init": "uniform"}, "smc is a one-pass method: it takes no init"),
        ({"sampler": "product-search", "steps": None, "temperature": 0.5}, "it takes no temperature"),
        ({"sampler": "product-search", "steps": None, "num_samples": 4}, "it takes no num_samples"),
        (
            {"sampler": "argmax", "steps": None, "temperature": 0.5},
            "argmax is a one-pass method: it takes no temperature",
        ),
        ({"sampler": "argmax", "steps": None, "top": 2}, "argmax gives one filling on 3 blank tokens"),
        ({"forbid": ["ice cream"]}, "cannot forbid"),
        ({"forbid": "day"}, "forbid must be a list of words"),
        ({"init": "zeros"}, "init must be one of uniform, independent, left-to-right"),
        ({"decode": "best"}, "decode must be one of"),
        ({"temperature": 0}, "temperature must be positive"),
        ({"temperature": math.nan}, "temperature must be a finite number"),
        ({"seed": -1}, "seed must be an integer >= 0"),
    ],
)
def test_bad_run_options(infiller, kwargs, message):
    with pytest.raises(InfillError, match=message):
        infiller.sample(TEMPLATE, **{"steps": 1, "num_samples": 2, **kwargs})


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda i: i.sample(None), "a template must be a string, got NoneType"),
        (lambda i: i.sample(b"a [MASK] day ."), "a template must be a string, got bytes"),
        (lambda i: i.sample_many("a [MASK] day ."), "templates must be a list of strings, got str"),
        (lambda i: i.sample_many([3]), "a template must be a string, got int"),
    ],
)
def test_wrong_types_raise_infill_errors(infiller, call, message):
    with pytest.raises(InfillError, match=message):
        call(infiller)


def test_bad_templates_and_models(infiller, tiny_model_dir):
    with pytest.raises(InfillError, match="longer than the model's maximum of 64"):
        infiller.sample("word " * 70 + "[MASK]", steps=1, num_samples=1)
    with pytest.raises(InfillError, match="no \\[MASK\\]"):
        infiller.sample_many(["The [MASK].", "nothing"], steps=1, num_samples=1)
    with pytest.raises(InfillError, match="does not exist; give the path of a local checkpoint"):
        Infiller(model=str(tiny_model_dir / "missing"))
    with pytest.raises(InfillError, match="tokenizer"):
        Infiller(model=infiller.model)


def test_infill_model_env_sets_default(monkeypatch, tiny_model_dir):
    monkeypatch.setenv("INFILL_MODEL", str(tiny_model_dir))
    assert Infiller().model_name == str(tiny_model_dir)


@pytest.mark.slow
def test_dev_model_fills_a_plausible_word(dev_model_path):
    infiller = Infiller(model=str(dev_model_path))
    template = "The capital of France is [MASK]."
    result = infiller.sample(template, sampler="gibbs", num_samples=4, steps=4, seed=0, top=2)
    assert all(s.text.startswith("The capital of France is ") for s in result.samples)
    t = infiller.parse(template)
    categories = infiller.category_ids()
    mask = infiller.tokenizer.mask_token_id
    energy = MaskedLMEnergy(infiller.model, t.input_ids, t.blank_positions, categories, mask)
    random_start = torch.randint(len(categories), (16, 1), generator=torch.Generator().manual_seed(0))
    baseline = energy(torch.nn.functional.one_hot(random_start, len(categories)).float()).mean().item()
    assert min(s.energy for s in result.samples) > baseline + 3


def _energy(infiller, template):
    t = infiller.parse(template)
    return MaskedLMEnergy(
        infiller.model, t.input_ids, t.blank_positions, infiller.category_ids(), infiller.tokenizer.mask_token_id
    )


@pytest.mark.parametrize("method", ["independent", "left-to-right", "argmax"])
def test_baselines_are_methods_with_pll_energies(infiller, method):
    result = infiller.sample(TEMPLATE, sampler=method, num_samples=5, seed=2)
    energy, t = _energy(infiller, TEMPLATE), infiller.parse(TEMPLATE)
    x = torch.searchsorted(
        infiller.category_ids(), torch.tensor([s.token_ids for s in result.samples])[:, t.blank_positions]
    )
    expected = energy(torch.nn.functional.one_hot(x, energy.num_categories).float())
    assert torch.allclose(torch.tensor([s.energy for s in result.samples]), expected, atol=1e-4)
    d = result.diagnostics
    assert (d.sampler, d.steps, d.acceptance_rate, d.forwards) == (
        method,
        0,
        None,
        3 if method == "left-to-right" else 1,
    )
    assert result.texts == infiller.sample(TEMPLATE, sampler=method, num_samples=5, seed=2).texts
    if method == "argmax":
        assert len(set(result.texts)) == 1


def test_mlm_draws_follow_the_masked_conditionals(infiller):
    """At a temperature near 0, independent draws are the all-masked argmax, and left-to-right draws are
    greedy: blank j's argmax given the earlier draws with the later blanks masked."""
    energy = _energy(infiller, TEMPLATE)
    generator = torch.Generator().manual_seed(0)
    masked = torch.ones(2, 3, dtype=torch.bool)
    zeros = torch.zeros(2, 3, dtype=torch.long)
    assert torch.equal(
        mlm_draws.draw(energy, "independent", 2, generator, 1e-6), energy.blank_logits(zeros, masked).argmax(-1)
    )
    greedy = mlm_draws.draw(energy, "left-to-right", 2, generator, 1e-6)
    for j in range(3):
        masked[:, j] = False
        before = torch.where(masked, 0, greedy)
        masked_j = masked.clone()
        masked_j[:, j] = True
        assert torch.equal(greedy[:, j], energy.blank_logits(before, masked_j)[:, j].argmax(-1))
    independent = mlm_draws.draw(energy, "independent", 400, torch.Generator().manual_seed(1))
    assert len(set(independent[:, 0].tolist())) > 100  # a random tiny model: draws, not argmax


def test_init_and_temperature_reach_the_sampler(infiller):
    cold = infiller.sample(
        TEMPLATE, sampler="gibbs-mh", num_samples=6, steps=2, seed=0, init="independent", temperature=0.5
    )
    assert (cold.diagnostics.init, cold.diagnostics.temperature, cold.diagnostics.forwards) == ("independent", 0.5, 1)
    energy = _energy(infiller, TEMPLATE)
    x = cold.trace.final_state.x
    pll = energy(torch.nn.functional.one_hot(x, energy.num_categories).float())
    assert torch.allclose(cold.trace.final_state.energy, pll / 0.5, atol=1e-4)  # the chain targets PLL / T
    assert torch.allclose(torch.tensor([s.energy for s in cold.samples]), pll, atol=1e-4)  # reported at T = 1


def test_tempered_energy_scales_value_gradient_and_conditionals(infiller):
    energy = _energy(infiller, TEMPLATE)
    tempered = Tempered(energy, 0.25)
    x_idx = torch.randint(energy.num_categories, (3, 3), generator=torch.Generator().manual_seed(0))
    x = torch.nn.functional.one_hot(x_idx, energy.num_categories).float()
    value, grad = value_and_grad(energy, x)
    t_value, t_grad = value_and_grad(tempered, x)
    assert torch.allclose(t_value, value * 4) and torch.allclose(t_grad, grad * 4)
    i = torch.tensor([0, 1, 2])
    assert torch.allclose(tempered.conditional_logits(x_idx, i), energy.conditional_logits(x_idx, i) * 4)


def test_top_decodes_from_every_visited_state(infiller):
    result = infiller.sample(TEMPLATE, sampler="gibbs-mh", num_samples=4, steps=6, seed=0, top=3, init="uniform")
    trace = result.trace
    assert result.samples[0].energy == pytest.approx(trace.energies.max().item(), abs=1e-4)
    assert result.diagnostics.candidates == len({tuple(r) for r in trace.samples.flatten(0, 1).tolist()})
    final = infiller.sample(
        TEMPLATE, sampler="gibbs-mh", num_samples=4, steps=6, seed=0, top=3, init="uniform", decode="final"
    )
    assert final.samples[0].energy == pytest.approx(trace.final_state.energy.max().item(), abs=1e-4)


def test_encoder_sequences_count_every_masked_copy(infiller):
    """d = 3 blank tokens, n = 4 chains: the all-masked pass is one sequence per template, a draw pass n, a PLL
    n * d, a gradient twice that; of those, what the cache of conditionals held is counted as hits instead."""

    def asked(result):
        return result.diagnostics.encoder_sequences + result.diagnostics.cache_hits

    independent = infiller.sample(TEMPLATE, sampler="independent", num_samples=4, seed=0)
    assert asked(independent) == 1 + 4 * 3  # the shared pass, then the PLL of every draw
    l2r = infiller.sample(TEMPLATE, sampler="left-to-right", num_samples=4, seed=0)
    assert asked(l2r) == 1 + 2 * 4 + 4 * 3 and l2r.diagnostics.cache_hits > 0  # the last draw pass is a PLL term
    dmala = infiller.sample(TEMPLATE, sampler="dmala", num_samples=4, steps=3, seed=0, init="uniform")
    assert dmala.diagnostics.encoder_sequences == (1 + 3) * 2 * 4 * 3  # value and gradient at start and per step
    gibbs = infiller.sample(TEMPLATE, sampler="gibbs", num_samples=4, steps=3, seed=0, init="uniform", top=2)
    distinct = gibbs.diagnostics.candidates
    assert asked(gibbs) == 3 * 4 + distinct * 3  # one forward per step, then re-scoring
    assert gibbs.diagnostics.cache_hits >= distinct - 4  # a visited state's last Gibbs conditional is a PLL term
    pair = infiller.sample_many(
        ["the [MASK] sat on the [MASK] .", "a [MASK] ran to my [MASK] !"], sampler="independent", num_samples=4, seed=0
    )
    assert [asked(r) for r in pair] == [1 + 4 * 2] * 2  # each template's own run


def test_marginals_are_fill_frequencies_over_visited_states(infiller):
    result = infiller.sample(TEMPLATE, sampler="gibbs-mh", num_samples=5, steps=6, seed=0, init="uniform", top=3)
    trace, t = result.trace, infiller.parse(TEMPLATE)
    visited = trace.samples[trace.burn_in :].flatten(0, 1)
    assert len(result.marginals) == 2  # one per written blank, [MASK*2] included
    first = result.marginals[0]
    counts = torch.unique(visited[:, 0], return_counts=True)[1].sort(descending=True).values
    assert [m["frequency"] for m in first] == pytest.approx((counts[:10] / len(visited)).tolist(), abs=1e-4)
    assert all(len(m["fill"].split()) == 2 for m in result.marginals[1])
    assert not torch.isnan(trace.energies[trace.burn_in :]).any()  # re-scored states filled into the trace
    data = result.to_dict()
    assert set(data) == {"template", "samples", "diagnostics", "marginals"} and len(data["samples"]) == 3
    assert t.num_blanks == 3


def test_stream_yields_in_input_order_as_batches_finish(infiller):
    from infill.pipeline.config import RunConfig

    templates = ["the [MASK] sat on the [MASK] .", "I [MASK] it.", "a [MASK] ran to my [MASK] !"]
    config = RunConfig.create(method="gibbs", num_samples=2, steps=2, seed=0)
    streamed = list(infiller.stream(templates, config))
    assert [i for i, _ in streamed] == [0, 1, 2]
    assert [r.texts for _, r in streamed] == [r.texts for r in infiller.run(templates, config)]
    steps = []
    infiller.sample(
        "I [MASK] it.", "gibbs", num_samples=2, steps=3, seed=0, on_step=lambda done, total: steps.append((done, total))
    )
    assert steps == [(1, 3), (2, 3), (3, 3)]

    def cancel(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        infiller.sample("I [MASK] it.", "gibbs", num_samples=2, steps=3, on_step=cancel)


def test_annealing_runs_stages_and_keeps_only_the_last(infiller):
    from infill.pipeline.config import RunConfig

    schedule = RunConfig.create(method="gibbs-mh", steps=12, temperature=0.5, anneal_from=4.0).annealing_schedule()
    assert [steps for _, steps in schedule] == [1, 1, 1, 1, 8]
    assert [round(t, 3) for t, _ in schedule] == [4.0, 2.378, 1.414, 0.841, 0.5]
    result = infiller.sample(
        TEMPLATE, sampler="gibbs-mh", num_samples=3, steps=12, seed=0, temperature=0.5, anneal_from=4.0, top=2
    )
    d = result.diagnostics
    assert (d.steps, d.burn_in, result.trace.samples.shape[0]) == (12, 4, 8)
    with pytest.raises(InfillError, match="must be above the temperature"):
        infiller.sample(TEMPLATE, "gibbs", steps=12, temperature=0.5, anneal_from=0.5)


def test_tuned_step_size_is_each_templates_own(infiller):
    results = infiller.sample_many(
        ["the [MASK] sat on the [MASK] .", "a [MASK] ran to my [MASK] !"],
        sampler="dmala",
        num_samples=3,
        steps=6,
        seed=0,
        init="uniform",
    )
    for result in results:
        tuned, tuning = result.diagnostics.tuned, result.trace.tuning
        assert tuned is not None and tuned["value"] == tuning.value and tuned["burn_in"] == result.diagnostics.burn_in
        assert tuned["value"] != result.diagnostics.hyperparameters["step_size"]  # it did adapt
        alone = infiller.sample(result.template, sampler="dmala", num_samples=3, steps=6, seed=0, init="uniform")
        assert result.diagnostics.tuned == alone.diagnostics.tuned  # each template its own run


def test_tempered_toy_energy_has_no_conditionals():
    from infill.energies import HasConditionals, PottsEnergy

    assert not isinstance(Tempered(PottsEnergy.random(3, 4), 0.5), HasConditionals)


def test_include_is_met_and_reported_with_every_term(infiller):
    result = infiller.sample(TEMPLATE, sampler="gibbs-mh", num_samples=6, steps=8, seed=0, top=3, include=["door"])
    energy = _energy(infiller, TEMPLATE)
    for s in result.samples:
        assert "door" in " ".join(s.fills).split() and s.terms["include"] == 0.0
        assert s.energy == s.terms["pll"]  # the reported energy stays the PLL
    x = torch.searchsorted(
        infiller.category_ids(),
        torch.tensor([s.token_ids for s in result.samples])[:, infiller.parse(TEMPLATE).blank_positions],
    )
    assert torch.allclose(
        torch.tensor([s.energy for s in result.samples]),
        energy(torch.nn.functional.one_hot(x, energy.num_categories).float()),
        atol=1e-4,
    )
    plain = infiller.sample(TEMPLATE, sampler="gibbs-mh", num_samples=6, steps=8, seed=0, top=3)
    assert not any("door" in " ".join(s.fills).split() for s in plain.samples) and plain.samples[0].terms is None
    with pytest.raises(InfillError, match="cannot include 4 words in 3 blanks"):
        infiller.sample(TEMPLATE, include=["door", "cat", "dog", "sun"])
    with pytest.raises(InfillError, match="also forbidden"):
        infiller.sample(TEMPLATE, include=["door"], forbid=["door"])
    with pytest.raises(InfillError, match="include must be a list of words"):
        infiller.sample(TEMPLATE, include="door")


def test_rewrite_starts_from_the_sentence_and_changes_some_words(infiller):
    source = "the cat sat on the mat ."
    result = infiller.rewrite(source, change=0.5, num_samples=8, steps=6, seed=0, top=5)
    assert result.template == "[MASK] [MASK] [MASK] [MASK] [MASK] [MASK] ."
    assert len(set(result.texts)) == len(result.texts) >= 2
    for s in result.samples:
        changed = sum(a != b for a, b in zip(s.text.split(), source.split()))
        assert s.terms["closeness"] == -changed and s.text.endswith(" .")
    assert infiller.rewrite(source, change=0.5, num_samples=8, steps=6, seed=0, top=5).texts == result.texts
    cased = infiller.rewrite("The cat sat on the mat .", change=0.5, num_samples=8, steps=6, seed=0, top=5)
    for s in cased.samples:  # kept words as the user wrote them, a changed first word capitalised
        assert s.text[0].isupper() and all(
            f == w for f, w in zip(s.fills, "The cat sat on the mat".split()) if f.lower() == w.lower()
        )
    with pytest.raises(InfillError, match="change must be a fraction"):
        infiller.rewrite(source, change=1.5)
    with pytest.raises(InfillError, match="rewrite needs an MCMC sampler"):
        infiller.rewrite(source, sampler="argmax")
    with pytest.raises(InfillError, match="rewrite takes plain text"):
        infiller.rewrite("the cat sat on the [MASK] .")


def test_word_blanks_choose_their_length_and_keep_the_template_text(infiller):
    template = "The cat [MASK*0-2] on the mat, said [MASK]."
    for method in ("rjmcmc", "per-length"):
        result = infiller.sample(template, num_samples=4, steps=3, seed=0, top=3, blank_unit="word", span_method=method)
        assert result.diagnostics.sampler == method and result.diagnostics.energy != "pll"
        assert result.diagnostics.temperature == SPAN_TEMPERATURE == 0.5  # word blanks' default
        assert result.diagnostics.encoder_sequences > 0 and len(result.marginals) == 2
        for s in result.samples:
            span, word = s.fills
            assert len(span.split()) <= 2 and len(word.split()) == 1
            assert s.text == template.replace("[MASK*0-2]", span).replace("[MASK]", word).replace("cat  on", "cat on")
        energies = [s.energy for s in result.samples]
        assert energies == sorted(energies, reverse=True)
    again = infiller.sample(template, num_samples=4, steps=3, seed=0, top=3, blank_unit="word")
    assert again.texts == infiller.sample(template, num_samples=4, steps=3, seed=0, top=3, blank_unit="word").texts
    with pytest.raises(InfillError, match="has word blanks, which the span sampler fills"):
        infiller.sample("The cat [MASK*?] here.", sampler="left-to-right")
    included = infiller.sample("The cat [MASK*?] here.", num_samples=4, steps=3, seed=0, top=3, include=["door"])
    assert included.samples and all(
        "door" in s.fills[0].split() and s.terms["include"] == 0.0 and s.energy == s.terms["span"]
        for s in included.samples
    )
    assert "include" in included.diagnostics.energy
    with pytest.raises(InfillError, match="cannot include 3 words in blanks of at most 2 words"):
        infiller.sample("The cat [MASK*0-2] here.", include=["door", "mat", "sun"])
    with pytest.raises(InfillError, match="also forbidden"):
        infiller.sample("The cat [MASK*?] here.", include=["door"], forbid=["door"])


@pytest.mark.slow
def test_dev_model_word_blank_takes_a_word_of_several_pieces(dev_model_path):
    infiller = Infiller(model=str(dev_model_path))
    # every distinct visited fill, at temperature 1 (at the span default 0.5 the chains keep to one-piece words)
    result = infiller.sample("we bought a [MASK] in paris .", seed=0, blank_unit="word", temperature=1.0, top=100)
    assert any(t.startswith("##") for s in result.samples for t in s.tokens)  # visited fill; e.g. so ##uven ##ir
    assert all(
        s.text == f"we bought a {s.fills[0]} in paris ." and len(s.fills[0].split()) == 1 for s in result.samples
    )


@pytest.mark.slow
def test_dev_model_includes_a_word_of_several_pieces(dev_model_path):
    infiller = Infiller(model=str(dev_model_path))
    assert infiller.tokenizer.tokenize("souvenir") == ["so", "##uven", "##ir"]
    result = infiller.sample("we bought a [MASK*1-3] in paris .", seed=0, top=5, include=["souvenir"])
    assert len(result.samples) == 5
    for s in result.samples:
        assert "souvenir" in s.fills[0].split() and s.terms["include"] == 0.0
        assert s.text == f"we bought a {s.fills[0]} in paris ."
    with pytest.raises(InfillError, match="it is 3 tokens for this model, not one"):
        infiller.sample("we bought a [MASK] in paris .", include=["souvenir"])  # token blanks


def test_annealed_block_mh_proposes_from_the_masked_lm(infiller, monkeypatch):
    """Under ``anneal_from`` block-mh proposes from the model's ``blank_logits``, as it does at temperature 1."""

    def conditional_logits(self, x_idx, i):
        raise AssertionError("block-mh proposed from conditional_logits")

    monkeypatch.setattr(MaskedLMEnergy, "conditional_logits", conditional_logits)
    result = infiller.sample(TEMPLATE, sampler="block-mh", num_samples=3, steps=6, seed=0, anneal_from=3.0)
    assert len(result.samples) == 3
