"""Energies' abilities are declared once and every wrapper passes each on, scaled where a temperature must."""

import torch

from infill.constraints.terms import Closeness, Include
from infill.constraints.weighted_sum import WeightedSum
from infill.energies import PottsEnergy
from infill.energies.abilities import KEPT, SCALED, HasBlankLogits, HasDifferences, HasIndexedValues
from infill.energies.tempered import Tempered


class Offering:
    """A fake energy offering every ability: each scaled one returns ones, each fact is a distinct object."""

    def __init__(self):
        for name in SCALED:
            setattr(self, name, lambda *args, **kwargs: torch.ones(2))
        for name in KEPT:
            setattr(self, name, object())

    def __call__(self, x):
        return x.sum((1, 2))


def test_tempered_passes_on_every_ability_scaled_and_every_fact_unchanged():
    energy = Offering()
    tempered = Tempered(energy, 0.25)
    for name in SCALED:
        torch.testing.assert_close(getattr(tempered, name)(0, read=1), torch.full((2,), 4.0), msg=name)
    assert all(getattr(tempered, name) is getattr(energy, name) for name in KEPT)
    assert isinstance(tempered, HasBlankLogits)


def test_tempered_adds_no_ability_its_energy_lacks():
    tempered = Tempered(PottsEnergy.random(3, 4), 0.5)
    assert tempered.num_categories == 4
    assert not any(hasattr(tempered, name) for name in SCALED)
    assert not isinstance(tempered, (HasBlankLogits, HasIndexedValues))


def test_weighted_sum_offers_differences_only_where_every_term_has_them():
    include, closeness = Include([[5]], 6), Closeness(torch.tensor([0, 1, 2]), 6)
    both = WeightedSum([(4.0, include), (0.5, closeness)])
    x = torch.tensor([[0, 1, 2], [5, 5, 0]])
    torch.testing.assert_close(both.differences(x), 4.0 * include.differences(x) + 0.5 * closeness.differences(x))
    torch.testing.assert_close(Tempered(both, 0.5).differences(x), 2 * both.differences(x))
    assert not isinstance(WeightedSum([(1.0, include), (1.0, lambda y: y[:, 0, 0])]), HasDifferences)
