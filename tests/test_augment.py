"""Augment (infill.augment, Infiller.augment, infill augment): distinct variants that differ from the source, the
user's text kept outside the edits, edits that rebuild both ways, protection, casing, seeds per sentence."""

from __future__ import annotations

import json
import re

import pytest

import infill
from infill.augmentation import articles, edits, words
from infill.augmentation.variants import Variants
from infill.cli import main
from infill.errors import InfillError

SENTENCES = [
    "The old man walked slowly to the market, then sat down.",
    "She bought three apples and a loaf of bread yesterday.",
    "A quiet, tidy house stood near the river.",
    "They watched the game from the back row.",
    "Our teacher read a long story to the class.",
    "He left the door open when he went out.",
    "The children played in the garden until dark.",
]


@pytest.fixture(scope="module")
def infiller(tiny_model_dir):
    return infill.Infiller(str(tiny_model_dir))


def outside_edits_kept(source: str, variant) -> bool:
    """Every character of ``source`` outside the edits is in the variant, in order, at its shifted place."""
    at, shift = 0, 0
    for e in variant.edits:
        start, end = e.source_span
        if source[at:start] != variant.text[at + shift : start + shift]:
            return False
        shift += len(e.new) - (end - start)
        at = end
    return source[at:] == variant.text[at + shift :]


def check_variants(source: str, found: Variants, n: int) -> None:
    assert isinstance(found, list) and found.source == source
    assert len(found) + found.shortfall == n
    texts = [v.text for v in found]
    assert len(set(texts)) == len(texts) and source not in texts
    for v in found:
        assert "[MASK" not in v.text.upper() and "[UNK]" not in v.text
        assert v.edits and all(e.old.casefold() != e.new.casefold() for e in v.edits)
        assert edits.apply(source, v.edits) == v.text and edits.revert(v.text, v.edits) == source
        assert all(source[slice(*e.source_span)] == e.old and v.text[slice(*e.variant_span)] == e.new for e in v.edits)
        assert outside_edits_kept(source, v)
        assert v.score == v.score and v.score <= 0  # a PLL


def test_n_distinct_variants_each_differing_from_the_source(infiller):
    found = infiller.augment(SENTENCES[:3], n=4, change=0.3, seed=0)
    assert isinstance(found, list) and len(found) == 3
    for source, variants in zip(SENTENCES, found):
        check_variants(source, variants, 4)
        assert len(variants) == 4  # a random tiny BERT still has the whole vocabulary to draw from


def test_a_string_gives_a_list_and_a_list_gives_lists(infiller):
    one = infiller.augment(SENTENCES[0], n=2)
    assert isinstance(one, Variants) and all(hasattr(v, "edits") for v in one)
    many = infiller.augment([SENTENCES[0]], n=2)
    assert isinstance(many, list) and len(many) == 1 and isinstance(many[0], Variants)
    assert [v.text for v in many[0]] == [v.text for v in one]


def test_the_same_seed_gives_a_sentence_the_same_variants_in_any_batch(infiller):
    target = SENTENCES[3]
    alone = infiller.augment(target, n=3, change=0.3, seed=5)
    batch = infiller.augment(SENTENCES, n=3, change=0.3, seed=5)[3]
    moved = infiller.augment([target, *SENTENCES[:3]], n=3, change=0.3, seed=5)[0]
    assert [v.text for v in alone] == [v.text for v in batch] == [v.text for v in moved]
    assert [v.score for v in alone] == pytest.approx([v.score for v in batch], abs=1e-5)
    other = infiller.augment(target, n=3, change=0.3, seed=6)
    assert [v.text for v in other] != [v.text for v in alone]


def test_protected_words_numbers_urls_emails_and_ids_never_change(infiller):
    source = "Call Anna at 555 or mail anna@example.com, see https://example.org and www.site.net, ref NASA x9 today."
    kept = ["555", "anna@example.com", "https://example.org", "www.site.net", "NASA", "x9", "Anna", "today"]
    found = infiller.augment(source, n=5, change=0.9, protect=["anna", r"to\w+"], seed=1)
    check_variants(source, found, 5)
    for v in found:
        olds = {e.old for e in v.edits}
        assert not olds & set(kept), olds
        for word in kept:
            assert word in v.text


def test_words_and_their_protection_without_a_model():
    text = "Dogs, cats; e-mail me at a@b.co: ID42 and NASA's http://x.io plan (really)."
    found = {w.core(text): w.why for w in words.protected(text, words.patterns(["plan"]))}
    assert found["Dogs"] == "" and found["cats"] == "" and found["really"] == ""
    assert found["a@b.co"] == "e-mail" and found["ID42"] == "number" and found["http://x.io"] == "url"
    assert found["NASA's"] == "not a word" and found["plan"] == "protected" and found["e-mail"] == "not a word"
    assert words.protected("NASA rocks")[0].why == "id"
    names = "He met Claudia Augusta. Then three men and Twenty dogs came! Dogs bark at Dr. Chen"
    found = {w.core(names): w.why for w in words.protected(names)}
    assert found["Claudia"] == found["Augusta"] == "name" and found["He"] == found["Then"] == found["Dogs"] == ""
    assert found["three"] == found["Twenty"] == "number" and found["men"] == found["dogs"] == ""
    assert found["Chen"] == "name"  # a title's full stop ends no sentence
    assert found["Dr"] == "title" and words.protected("Dr. Chen paid")[0].why == "title"  # even where it starts
    dogs = words.split(text)[0]
    assert text[dogs.start : dogs.end] == "Dogs," and dogs.core(text) == "Dogs"


def test_the_choice_is_seeded_by_the_seed_and_the_text():
    assert words.seed_of(0, "a b") == words.seed_of(0, "a b") != words.seed_of(1, "a b")
    assert words.choose(range(10), 3, 7, 5) == words.choose(range(10), 3, 7, 5)
    assert len({words.choose(range(10), 3, s)[0] for s in range(20)}) > 1
    spread = words.choose(range(10), 3, 7, 5)
    assert len(set(spread)) == 5 and all(len(c) == 3 and list(c) == sorted(c) for c in spread)
    assert max(sum(i in c for c in spread) for i in range(10)) == 2  # the least used words first: 15 uses of 10
    assert all(b - a > 1 for c in spread for a, b in zip(c, c[1:]))  # none beside another
    assert words.spread([4, 5, 3, 9], 3) == [4, 9, 5] and words.spread([1, 2], 3) == [1, 2]
    assert (
        words.choose(range(4), 2, 0, 6) != words.choose(range(4), 2, 1, 6)
        and len(set(words.choose(range(4), 2, 0, 6))) == 6
    )
    assert words.choose([2, 5], 3, 0, 3) == [(2, 5)] * 3  # fewer words than asked: all of them, every variant
    assert words.count(20, 0.15, 1, None) == 3 and words.count(4, 0.1, 1, None) == 1
    assert words.count(20, 0.5, 1, 2) == 2 and words.count(20, 0.05, 4, None) == 4


def test_a_sentences_variants_change_different_words(infiller):
    for source, variants in zip(SENTENCES, infiller.augment(SENTENCES[:4], n=4, change=0.2, seed=0)):
        check_variants(source, variants, 4)
        changed = {tuple(e.source_span for e in v.edits) for v in variants}
        assert len(changed) == len(variants) == 4, (source, changed)


def test_casing_follows_the_source_word():
    assert edits.cased("dog", "Cat") == "Dog" and edits.cased("dog", "CAT") == "DOG"
    assert edits.cased("Dog", "cat") == "dog" and edits.cased("dog", "I") == "Dog"


def test_variants_keep_the_source_words_casing(infiller):
    source = "The Old Man walked to the Market in Town."
    cased = [
        e
        for v in infiller.augment(source, n=5, change=0.5, seed=2)
        for e in v.edits
        if e.new[:1].lower() != e.new[:1].upper()
    ]
    assert cased  # the random tiny BERT also draws fills opening without case (CJK, digits)
    for e in cased:
        assert e.new[:1].isupper() == e.old[:1].isupper() and e.new[1:] == e.new[1:].lower()


def test_edits_apply_and_revert_and_refuse_a_mismatch():
    text, made = edits.splice("ab, cd ef", [(0, 2, "xyz"), (7, 9, "q")])
    assert text == "xyz, cd q" and edits.apply("ab, cd ef", made) == text and edits.revert(text, made) == "ab, cd ef"
    with pytest.raises(ValueError):
        edits.apply("zz, cd ef", made)


def test_the_cli_prints_variants_and_json_records(tiny_model_dir, capsys, tmp_path):
    lines = tmp_path / "s.txt"
    lines.write_text(f"{SENTENCES[0]}\n\n{SENTENCES[1]}\n")
    model = ["--model", str(tiny_model_dir)]
    assert main(["augment", "-f", str(lines), "-n", "2", *model]) == 0
    blocks = capsys.readouterr().out.rstrip("\n").split("\n\n")
    assert [len(b.split("\n")) for b in blocks] == [2, 2]
    assert main(["augment", SENTENCES[0], "-n", "2", "--json", *model]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["source"] == SENTENCES[0] and len(record["variants"]) == 2
    assert [v["text"] for v in record["variants"]] == blocks[0].split("\n")
    assert set(record["variants"][0]) >= {"text", "edits", "score"}
    out = tmp_path / "o.jsonl"
    assert main(["augment", "-f", str(lines), "-n", "2", "--out", str(out), *model]) == 0
    first = out.read_text()
    assert [json.loads(r)["line"] for r in first.splitlines()] == [1, 3]
    assert main(["augment", "-f", str(lines), "-n", "2", "--out", str(out), *model]) == 0  # resumed: all done
    assert out.read_text() == first


def test_the_module_level_augment_loads_a_model_once(tiny_model_dir):
    from infill.pipeline import augment_texts as run

    first = infill.augment(SENTENCES[0], n=2, model=str(tiny_model_dir))
    loaded = dict(run._LOADED)
    again = infill.augment([SENTENCES[0]], n=2, model=str(tiny_model_dir))
    assert run._LOADED == loaded and [v.text for v in again[0]] == [v.text for v in first]


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"texts": ""}, "empty"),
        ({"texts": "42 NASA"}, "nothing to change"),
        ({"texts": "a b", "n": 0}, "n must"),
        ({"texts": "a b", "change": 0}, "change"),
        ({"texts": "a b", "change": 1.5}, "change"),
        ({"texts": "a b", "protect": ["("]}, "regular expression"),
        ({"texts": "a b", "protect": "word"}, "protect"),
        ({"texts": "a [MASK] b"}, "plain text"),
        ({"texts": "a b", "sampler": "gibbs"}, "one-pass"),
        ({"texts": "a b", "min_words": 3, "max_words": 2}, "min_words"),
        ({"texts": None}, "string"),
        ({"texts": "a b", "pll": "no"}, "pll must be true or false"),
    ],
)
def test_bad_input_is_refused_in_one_line(infiller, kwargs, fragment):
    with pytest.raises(InfillError, match=re.escape(fragment)) as error:
        infiller.augment(**kwargs)
    assert "\n" not in str(error.value)


ARTICLE_MISFIT = re.compile(r"\b(?:an [bcdfgjklmnpqrstvwz]|a [aeio](?!ne\b|nce\b))[\w'-]*", re.IGNORECASE)


def misfit_articles(variant) -> list[str]:
    """The article pairs of ``variant`` that touch an edit and do not fit (``an storm``, ``a old``)."""
    return [
        m.group()
        for m in ARTICLE_MISFIT.finditer(variant.text)
        if any(e.variant_span[0] <= m.end() and e.variant_span[1] >= m.start() for e in variant.edits)
    ]


def test_an_article_beside_a_change_fits_the_word_after_it():
    assert not articles.fits("an", "loss") and not articles.fits("A", "old") and articles.fits("an", "Apple")
    for article, word in (("an", "hour"), ("a", "unit"), ("an", "FBI"), ("a", "one"), ("a", "euro")):
        assert articles.fits(article, word)  # where the first letter does not tell, the variant is kept
    assert not articles.agree("he saw a old man", [(9, 12)])  # the new word after an article
    assert not articles.agree("he saw an tall man", [(7, 9)])  # the new word is the article
    assert not articles.agree("a apple", [(1, 1)])  # a word deleted between them
    assert articles.agree("he saw a old man", [(13, 16)])  # the user's own text elsewhere


@pytest.mark.slow
def test_a_corpus_run_on_the_dev_mlm_keeps_the_text_rebuilds_from_edits_and_adds_no_number(dev_model_path):
    lines = [line.strip() for line in open(dev_model_path.parents[1] / "corpora/bert-gen/wiki103.5k.txt")][:30]
    found = infill.Infiller(str(dev_model_path)).augment(lines, n=5, change=0.15, seed=0)
    assert len(found) == 30
    for source, variants in zip(lines, found):
        check_variants(source, variants, 5)
        cores = [w.core(source).casefold() for w in words.split(source)]
        for e in (e for v in variants for e in v.edits):
            at = next(i for i, w in enumerate(words.split(source)) if w.core_start == e.source_span[0])
            assert not words.numeric(e.new), (source, e)  # the model drew ten numbers here before
            assert len(e.new) > 1 or len(e.old) == 1, (source, e)  # no lone letter for a word
            assert e.new.casefold() not in cores[max(at - 1, 0) : at + 2], (source, e)  # nor a word beside it
        assert not [misfit_articles(v) for v in variants if misfit_articles(v)]  # the model drew 'an storm'
    assert sum(len(v) for v in found) >= 140  # nearly all 150 found


def repeated_words(found: list[Variants]) -> int:
    """How many of the variants' new words an earlier variant of the same source put at the same place."""
    repeats = 0
    for variants in found:
        places = [(e.source_span, e.new.casefold()) for v in variants for e in v.edits]
        repeats += len(places) - len(set(places))
    return repeats


@pytest.mark.slow
def test_a_sentences_variants_rarely_repeat_a_new_word_at_one_place(dev_model_path, monkeypatch):
    from infill.pipeline import augment

    lines = [line.strip() for line in open(dev_model_path.parents[1] / "corpora/bert-gen/tbc.5k.txt")][:30]
    infiller = infill.Infiller(str(dev_model_path))
    found = infiller.augment(lines, n=5, seed=0)
    monkeypatch.setattr(augment, "VARIETY", 0.0)  # the most likely draw whatever the earlier variants took
    likeliest = infiller.augment(lines, n=5, seed=0)
    assert repeated_words(found) <= repeated_words(likeliest) / 2, (repeated_words(found), repeated_words(likeliest))


def test_an_excluded_token_is_never_drawn_and_the_pll_is_unchanged(infiller):
    import torch

    from infill.pipeline import engine
    from infill.pipeline.config import RunConfig

    prepared = infiller.prepare(["a [MASK] day ."], RunConfig.create(sampler="argmax", num_samples=3))
    gen = torch.Generator().manual_seed(0)
    plain = engine.run_batch(infiller, prepared, 0, gen)
    best = plain.x[0, 0].item()
    excluded = torch.zeros(1, len(prepared.categories), dtype=torch.bool)
    excluded[0, best] = True
    kept_off = engine.run_batch(infiller, prepared, 0, gen, excluded=excluded)
    assert (kept_off.x[:, 0] != best).all()
    assert kept_off.energy.of_indices(plain.x[:1]).item() == pytest.approx(plain.energy.of_indices(plain.x[:1]).item())
    chains = infiller.prepare(["a [MASK] day ."], RunConfig.create(sampler="gibbs"))
    with pytest.raises(InfillError, match="one-pass"):
        engine.run_batch(infiller, chains, 0, gen, excluded=excluded)


def test_the_cli_names_the_line_a_bad_sentence_is_on(tiny_model_dir, capsys, tmp_path):
    lines = tmp_path / "s.txt"
    lines.write_text(f"{SENTENCES[0]}\n\n42 NASA\n")
    assert main(["augment", "-f", str(lines), "--model", str(tiny_model_dir)]) == 2
    assert f"{lines}:3: nothing to change" in capsys.readouterr().err


def test_a_one_pass_sampler_is_an_option_and_unscored_variants_cost_a_pass_a_template(infiller, tiny_model_dir, capsys):
    default = infiller.augment(SENTENCES[:3], n=3, change=0.3, seed=0)
    ordered = infiller.augment(SENTENCES[:3], n=3, change=0.3, seed=0, sampler="confident-first")
    unscored = infiller.augment(SENTENCES[:3], n=3, change=0.3, seed=0, pll=False)
    for source, variants in zip(SENTENCES[:3] * 2, ordered + unscored):
        check_variants(source, variants, 3)
    assert sum(v.encoder_sequences for v in default) < sum(v.encoder_sequences for v in ordered)
    assert [v.encoder_sequences for v in unscored] == [3, 3, 3]  # each variant's own template, one pass each
    assert {v.text for v in unscored[0]} == {v.text for v in default[0]}  # the same variants, scored apart
    for command in (["--sampler", "confident-first"], ["--no-pll"]):
        assert main(["augment", SENTENCES[0], "-n", "2", *command, "--model", str(tiny_model_dir)]) == 0
        assert len(capsys.readouterr().out.strip().splitlines()) == 2
