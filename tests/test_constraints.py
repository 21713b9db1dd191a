"""Terms and sums of terms: values, exact differences, gradients, names, errors; the classifier term; include
words from a tokenizer; rewrite's closeness on a tiny masked LM."""

import pytest
import torch
from conftest import tiny_bert
from transformers import BertConfig, BertForSequenceClassification

from infill.constraints import (
    INCLUDE_WEIGHT,
    Closeness,
    Include,
    SequenceClassifier,
    WeightedSum,
    calibrate_closeness,
    constrained_energy,
    include_term,
    source_categories,
)
from infill.energies import MaskedLMEnergy, PottsEnergy, one_hot, value_and_grad
from infill.energies.base import HasConditionals
from infill.energies.exact import all_states, exact_distribution
from infill.energies.tempered import Tempered
from infill.errors import InfillError
from infill.samplers import SAMPLERS, make_sampler, run_annealed
from infill.text.vocabulary import sampleable_token_ids

D, K = 4, 3
STATES = all_states(D, K)


def exact_differences(term, x_idx):
    """``U(x with x_i := k) - U(x)`` by evaluating every neighbour."""
    value = term(one_hot(x_idx, K))
    table = torch.zeros(len(x_idx), D, K)
    for i in range(D):
        for k in range(K):
            y = x_idx.clone()
            y[:, i] = k
            table[:, i, k] = term(one_hot(y, K)) - value
    return table


@pytest.mark.parametrize(
    "term", [Include([[2], [0, 1]], K), Closeness(torch.tensor([0, 1, 2, 0]), K)], ids=["include", "closeness"]
)
def test_differences_and_gradient_are_exact_for_single_changes(term):
    exact = exact_differences(term, STATES)
    torch.testing.assert_close(term.differences(STATES), exact)
    _, grad = value_and_grad(term, one_hot(STATES, K))
    torch.testing.assert_close(grad - grad.gather(2, STATES[..., None]), exact)


def test_include_counts_missing_words_and_closeness_changed_blanks():
    include = Include([[2], [0, 1]], K)  # word 1 has two forms
    x = torch.tensor([[2, 2, 2, 2], [1, 2, 2, 2], [0, 0, 0, 0]])
    assert include(one_hot(x, K)).tolist() == [-1.0, 0.0, -1.0]
    assert not include(one_hot(x[1:2], K)).signbit().any()  # 0.0, not -0.0, in JSON
    closeness = Closeness(torch.tensor([[0, 1, 2, 0], [2, 2, 2, 2]]), K)  # two stacked templates
    x = torch.tensor([[0, 1, 2, 0], [0, 0, 0, 0], [2, 2, 2, 2], [2, 2, 2, 1]])
    assert closeness(one_hot(x, K)).tolist() == [0.0, -2.0, 0.0, -1.0]
    assert closeness.changed(x).tolist() == [0, 2, 0, 1]


def test_weighted_sum_values_gradients_and_term_reports():
    pll = PottsEnergy.random(D, K, seed=0)
    include, closeness = Include([[2]], K), Closeness(torch.tensor([0, 1, 2, 0]), K)
    energy = WeightedSum([(1.0, pll, "pll"), (3.0, include), (0.5, closeness)])
    x = one_hot(STATES, K)
    expected = pll(x) + 3.0 * include(x) + 0.5 * closeness(x)
    torch.testing.assert_close(energy(x), expected)
    value, grad = energy.value_and_grad(x)
    reference = value_and_grad(lambda y: pll(y) + 3.0 * include(y) + 0.5 * closeness(y), x)
    torch.testing.assert_close(value, reference[0])
    torch.testing.assert_close(grad, reference[1])
    reports = energy.terms(x)
    assert list(reports) == ["pll", "include", "closeness"] and energy.num_categories == K
    torch.testing.assert_close(reports["include"], include(x))
    assert list(energy.terms(x, ["pll"])) == ["pll"] and energy.term("pll") is pll
    assert energy.weight("include") == 3.0
    assert not isinstance(energy, HasConditionals)  # no model term: gibbs enumerates the exact conditional


def test_a_term_without_gradient_counts_in_the_value_only():
    def hard(x):
        return (x.argmax(-1) == 1).sum(-1).float()  # no graph to x

    pll = PottsEnergy.random(D, K, seed=0)
    energy = WeightedSum([(1.0, pll, "pll"), (2.0, hard)])
    x = one_hot(STATES[:5], K)
    value, grad = energy.value_and_grad(x)
    torch.testing.assert_close(value, pll(x) + 2.0 * hard(x))
    torch.testing.assert_close(grad, value_and_grad(pll, x)[1])
    assert list(energy.terms(x)) == ["pll", "hard"]


@pytest.mark.parametrize(
    "terms, message",
    [
        ([], "at least one"),
        ([(float("nan"), lambda x: x.sum((1, 2)))], "finite number"),
        ([(True, lambda x: x.sum((1, 2)))], "finite number"),
        ([(1.0, "pll")], r"give \(weight, term\)"),
        ([(1.0, Include([[0]], 3)), (1.0, Include([[1]], 3))], "two terms are named 'include'"),
        ([(1.0, Include([[0]], 3)), (1.0, Closeness(torch.tensor([0]), 4))], "disagree on the number of categories"),
    ],
)
def test_bad_sums_are_refused_in_one_line(terms, message):
    with pytest.raises(InfillError, match=message):
        WeightedSum(terms)


def test_a_term_of_the_wrong_shape_is_refused_in_one_line():
    energy = WeightedSum([(1.0, lambda x: x.sum(-1))])
    with pytest.raises(InfillError, match=r"term 'term0' must return one value per chain, shape \(2,\), got \(2, 4\)"):
        energy(one_hot(STATES[:2], K))


@pytest.fixture(scope="module")
def tiny_pll():
    """PLL of a tiny random BERT (vocab 32) on 3 blanks restricted to 6 tokens: 216 enumerable states."""
    model = tiny_bert(vocab_size=32, seed=1, init=0.25)
    input_ids = torch.tensor([2, 10, 4, 11, 4, 4, 13, 3])
    return MaskedLMEnergy(model, input_ids, torch.tensor([2, 4, 5]), torch.arange(20, 26), mask_token_id=4)


def test_a_masked_lm_sum_proposes_from_the_model_plus_exact_differences(tiny_pll):
    include, closeness = Include([[5]], 6), Closeness(torch.tensor([0, 1, 2]), 6)
    energy = WeightedSum([(1.0, tiny_pll), (4.0, include), (0.5, closeness)])
    assert list(energy.entries)[0] == "pll" and isinstance(energy, HasConditionals)
    x, i = torch.tensor([[0, 1, 2], [5, 5, 0]]), torch.tensor([0, 2])
    rows = torch.arange(2)
    expected = (
        tiny_pll.conditional_logits(x, i)
        + 4.0 * include.differences(x)[rows, i]
        + 0.5 * closeness.differences(x)[rows, i]
    )
    torch.testing.assert_close(energy.conditional_logits(x, i), expected)
    tempered = Tempered(energy, 0.5)
    torch.testing.assert_close(tempered.conditional_logits(x, i), 2 * expected)
    blind = WeightedSum([(1.0, tiny_pll), (1.0, lambda y: y[:, 0, 0])])  # a term the proposal cannot see
    assert not isinstance(blind, HasConditionals)


def test_calibrated_closeness_on_a_tiny_masked_lm(tiny_pll):
    """The start from the model's conditionals at the source, refined by gibbs-mh, gives the asked-for
    expected fraction of changed blanks (exact, over the 216 states) within 0.05."""
    source = torch.tensor([3, 0, 4])
    energy = calibrate_closeness(
        tiny_pll,
        source,
        0.5,
        make_sampler("gibbs-mh"),
        chains=64,
        steps=30,
        rounds=3,
        generator=torch.Generator().manual_seed(0),
    )
    states = all_states(3, 6)
    fraction = (exact_distribution(energy, 3, 6) * (states != source).double().mean(1)).sum().item()
    assert abs(fraction - 0.5) <= 0.05, fraction
    assert energy.term("pll") is tiny_pll and isinstance(energy, HasConditionals)


def test_calibration_extends_a_sum_of_terms(tiny_pll):
    base = constrained_energy(tiny_pll, include=Include([[5]], 6))
    energy = calibrate_closeness(base, torch.tensor([3, 0, 4]), 0.3)
    assert list(energy.entries) == ["pll", "include", "closeness"] and energy.weight("include") == INCLUDE_WEIGHT


@pytest.mark.parametrize("change", [0, 1, -0.5, "half", True])
def test_change_must_be_a_fraction(tiny_pll, change):
    with pytest.raises(InfillError, match="change must be a fraction strictly between 0 and 1"):
        calibrate_closeness(tiny_pll, torch.tensor([0, 1, 2]), change)


def tiny_classifier(vocab_size=32, labels=3):
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=labels,
        id2label={0: "neg", 1: "neutral", 2: "pos"},
        label2id={"neg": 0, "neutral": 1, "pos": 2},
    )
    return BertForSequenceClassification(config).eval()


def test_classifier_term_equals_the_classifier_on_token_ids_and_has_a_gradient(tiny_pll):
    classifier = tiny_classifier()
    term = SequenceClassifier(classifier, "pos").bind(tiny_pll)
    x_idx = all_states(3, 6)[::7]
    ids = tiny_pll.token_ids(x_idx)
    with torch.no_grad():
        expected = torch.log_softmax(classifier(input_ids=ids).logits, -1)[:, 2]
    value, grad = value_and_grad(term, one_hot(x_idx, 6))
    torch.testing.assert_close(value, expected)
    assert grad.shape == (len(x_idx), 3, 6) and grad.abs().sum() > 0
    energy = WeightedSum([(1.0, tiny_pll), (2.0, term)])
    assert list(energy.entries) == ["pll", "classifier"] and not isinstance(energy, HasConditionals)
    torch.testing.assert_close(
        energy.value_and_grad(one_hot(x_idx, 6))[1], value_and_grad(tiny_pll, one_hot(x_idx, 6))[1] + 2.0 * grad
    )


@pytest.mark.parametrize(
    "label, vocab, message",
    [
        ("happy", 32, "has no label 'happy'; its labels: neg, neutral, pos"),
        (3, 32, "label 3 is out of range for a classifier of 3 labels"),
        (0, 16, "the classifier knows 16 tokens, the template uses id 25: it must share the masked LM's tokenizer"),
    ],
)
def test_classifier_mismatches_are_refused_in_one_line(tiny_pll, label, vocab, message):
    with pytest.raises(InfillError, match=message):
        SequenceClassifier(tiny_classifier(vocab), label).bind(tiny_pll)


def test_a_runs_energy_binds_a_classifier_and_weighs_the_include_words(tiny_pll):
    include = Include([[5]], 6)
    energy = constrained_energy(
        tiny_pll, [(0.5, SequenceClassifier(tiny_classifier(), 0), "tone"), (1.0, lambda x: x[:, 0, 0])], include
    )
    assert list(energy.entries) == ["pll", "include", "tone", "term3"]
    assert energy.weight("include") == INCLUDE_WEIGHT and energy.term("tone").input_ids is not None
    x = one_hot(torch.tensor([[5, 0, 1]]), 6)
    assert set(energy.terms(x)) == set(energy.entries) and energy.terms(x)["include"].item() == 0.0


@pytest.fixture(scope="module")
def categories(bert_tokenizer):
    return sampleable_token_ids(bert_tokenizer, forbid=["dog"])


def test_include_words_are_category_sets(bert_tokenizer, categories):
    term = include_term(bert_tokenizer, categories, ["Piano", "piano", "cat"], num_blanks=2, forbid=["dog"])
    assert term.members.shape == (len(categories), 2)  # "Piano" and "piano" are one word
    piano = categories[term.members[:, 0].bool()].tolist()
    assert bert_tokenizer.convert_ids_to_tokens(piano) == ["piano"]


@pytest.mark.parametrize(
    "words, blanks, message",
    [
        (["cat", "piano", "tree"], 2, "cannot include 3 words in 2 blanks: give at most 2 words or add blanks"),
        (["Dog"], 3, "cannot include 'Dog': it is also forbidden"),
        (["xylophonist"], 3, "cannot include 'xylophonist': it is 5 tokens for this model, not one"),
        (["##ing"], 3, "cannot include '##ing': it is 3 tokens for this model"),
        ("cat", 3, "include takes a list of words"),
        ([""], 3, "include takes a list of words"),
    ],
)
def test_impossible_includes_are_refused_before_sampling(bert_tokenizer, categories, words, blanks, message):
    with pytest.raises(InfillError, match=message):
        include_term(bert_tokenizer, categories, words, num_blanks=blanks, forbid=["dog"])


def test_a_word_no_blank_may_take_is_refused(bert_tokenizer):
    only_cat = torch.tensor([bert_tokenizer.convert_tokens_to_ids("cat")])
    with pytest.raises(InfillError, match="cannot include 'piano': no blank may take it"):
        include_term(bert_tokenizer, only_cat, ["piano"], 1)


def test_source_categories(bert_tokenizer, categories):
    ids = torch.tensor(bert_tokenizer.convert_tokens_to_ids(["the", "cat", "sat"]))
    x = source_categories(categories, ids)
    assert categories[x].tolist() == ids.tolist()
    with pytest.raises(InfillError, match="the source holds a token no blank may take"):
        source_categories(categories, torch.tensor(bert_tokenizer.convert_tokens_to_ids(["the", "dog"])))


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_every_sampler_runs_on_a_masked_lm_sum_with_every_kind_of_term(tiny_pll, name):
    energy = constrained_energy(
        tiny_pll,
        [(1.0, SequenceClassifier(tiny_classifier(), "pos")), (0.5, Closeness(torch.tensor([0, 1, 2]), 6))],
        Include([[5]], 6),
    )
    x0 = torch.tensor([[0, 1, 2]] * 4)
    trace = run_annealed(make_sampler(name), energy, x0, [(2.0, 2), (1.0, 3)], torch.Generator().manual_seed(0))
    assert trace.samples.shape == (3, 4, 3) and trace.evaluations > 0
    if getattr(SAMPLERS[name], "adjusted", True):  # every MH sampler's cached energy is the sum's
        torch.testing.assert_close(trace.energies[-1], energy(one_hot(trace.final_state.x, 6)))
