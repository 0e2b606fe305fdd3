"""Pricing one prediction: the cheapest matching offer, and a day of serving for the load."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.advise.pricing import priced_serving, priced_training
from chipwise.hardware import default_catalog
from chipwise.perf import InferPrediction, TrainPrediction, predict

from .factories import serving, training

CAT = default_catalog()


def test_any_pricing_is_never_dearer_than_on_demand() -> None:
    chip = CAT.chip("tpu-v6e")
    req = training(chips=("tpu-v6e",), max_chips=16)
    pred = predict(req.workload, chip, 8)
    assert isinstance(pred, TrainPrediction)
    on_demand = priced_training(pred, chip, req, CAT)
    cheapest = priced_training(pred, chip, replace(req, pricing="any"), CAT)
    assert cheapest.usd is not None and on_demand.usd is not None
    assert cheapest.usd <= on_demand.usd


def test_serving_prices_a_day_and_counts_replicas_for_the_load() -> None:
    req = serving(chips=("h100-sxm",), requests_per_day=1e6)
    chip = CAT.chip("h100-sxm")
    pred = predict(req.workload, chip, 1)
    assert isinstance(pred, InferPrediction)
    light = priced_serving(pred, chip, replace(req, requests_per_day=1e3), CAT)
    heavy = priced_serving(pred, chip, req, CAT)
    assert heavy.replicas >= light.replicas >= 1
    assert heavy.usd is not None and light.usd is not None
    assert heavy.usd / light.usd == pytest.approx(heavy.replicas / light.replicas)
