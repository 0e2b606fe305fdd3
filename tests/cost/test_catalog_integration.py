"""The cost stage over the packaged catalog: every chip prices, none crashes a comparison."""

import chipwise.cost as cost
from chipwise.cost import NotPurchasable, OwnedCost, TrainingRun, costs_of_run, owned_cost
from chipwise.hardware import default_catalog
from chipwise.perf.base import Breakdown
from tests.cost.factories import train_pred


def test_public_api_names_exist_once() -> None:
    assert len(set(cost.__all__)) == len(cost.__all__)
    for name in cost.__all__:
        assert hasattr(cost, name), name


def test_every_packaged_chip_has_a_tco_or_a_reason() -> None:
    catalog = default_catalog()
    for chip in catalog.chips:
        result = owned_cost(chip, catalog)
        assert isinstance(result, OwnedCost | NotPurchasable)
        if isinstance(result, OwnedCost):
            assert result.usd_per_chip_hour_owned > 0
            assert chip.purchasable
        else:
            assert chip.id in result.reason
        if chip.kind == "tpu":
            assert isinstance(result, NotPurchasable)


def test_every_packaged_offer_prices_a_run() -> None:
    catalog = default_catalog()
    for chip in catalog.chips:
        pred = train_pred(chip_id=chip.id, breakdown=Breakdown(compute_s=2.0))
        for c in costs_of_run(pred, catalog, TrainingRun(tokens=1e9)):
            assert c.usd_total > 0
            assert c.offer.source and c.offer.date
