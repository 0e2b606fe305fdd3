"""The packaged cloud offers and purchase prices: sourced, dated, per chip and consistent."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from chipwise.hardware import PriceOffer, default_catalog
from chipwise.hardware.schema import parse_date

CATALOG = default_catalog()
OFFERS = CATALOG.offers
_ISO_DATE = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")
# Price order within one provider, chip and region: commitment and preemption only cut prices.
CHEAPER_THAN = {
    "spot": "on-demand",
    "committed-1y": "on-demand",
    "committed-3y": "committed-1y",
    "capacity-block": "on-demand",
}


def _offer_id(o: PriceOffer) -> str:
    return f"{o.provider}-{o.chip_id}-{o.pricing}-{o.region}"


def test_there_are_offers_for_every_kind_of_pricing_and_provider() -> None:
    assert {o.pricing for o in OFFERS} == {
        "on-demand", "spot", "committed-1y", "committed-3y", "capacity-block",
    }  # fmt: skip
    assert {"gcp", "aws", "azure", "lambda", "runpod"} <= {o.provider for o in OFFERS}


@pytest.mark.parametrize("offer", OFFERS, ids=_offer_id)
def test_every_offer_names_a_catalog_chip_and_a_dated_source(offer: PriceOffer) -> None:
    assert CATALOG.chip(offer.chip_id).id == offer.chip_id
    assert len(offer.source) > 3
    assert _ISO_DATE.fullmatch(offer.date)
    assert parse_date(offer.date) <= dt.date.today()


@pytest.mark.parametrize("offer", OFFERS, ids=_offer_id)
def test_prices_are_per_chip_hour_not_per_instance(offer: PriceOffer) -> None:
    """An 8-GPU instance price left undivided would be far above any single chip's."""
    assert 0.05 <= offer.usd_per_chip_hour <= 20


def test_tpus_are_offered_only_by_gcp() -> None:
    tpu_offers = [o for o in OFFERS if CATALOG.chip(o.chip_id).kind == "tpu"]
    assert tpu_offers
    assert {o.provider for o in tpu_offers} == {"gcp"}


def test_every_gcp_tpu_with_a_price_has_spot_and_on_demand() -> None:
    by_chip: dict[str, set[str]] = {}
    for o in OFFERS:
        if o.provider == "gcp" and o.chip_id.startswith("tpu-"):
            by_chip.setdefault(o.chip_id, set()).add(o.pricing)
    assert {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"} <= set(by_chip)
    for chip_id, pricings in by_chip.items():
        assert {"on-demand", "spot"} <= pricings, chip_id


@pytest.mark.parametrize("offer", [o for o in OFFERS if o.pricing in CHEAPER_THAN], ids=_offer_id)
def test_discounted_prices_are_below_the_undiscounted_one(offer: PriceOffer) -> None:
    undiscounted = [
        o
        for o in OFFERS
        if (o.provider, o.chip_id) == (offer.provider, offer.chip_id)
        and o.pricing == CHEAPER_THAN[offer.pricing]
    ]
    # the same instance type when it has both prices (a 1-GPU and an 8-GPU machine of one
    # chip differ in host share per GPU: AWS g5.xlarge $1.006 vs g5.48xlarge $2.036 per GPU)
    same = [o for o in undiscounted if offer.instance and o.instance == offer.instance]
    dearer = [o.usd_per_chip_hour for o in (same or undiscounted)]
    if not dearer:
        pytest.skip(f"no {CHEAPER_THAN[offer.pricing]} price to compare with")
    assert offer.usd_per_chip_hour < min(dearer)


def test_purchases_are_sourced_and_only_for_purchasable_chips() -> None:
    assert CATALOG.purchases
    for p in CATALOG.purchases:
        assert CATALOG.chip(p.chip_id).purchasable, p.chip_id
        assert len(p.source) > 3 and _ISO_DATE.fullmatch(p.date)
        assert 500 <= p.usd <= 100_000
    assert len({p.chip_id for p in CATALOG.purchases}) == len(CATALOG.purchases)


# GCP bills accelerator-optimized VMs as GPU + host VM SKUs; an offer must be their sum.
_GCP_MACHINE = re.compile(r"^(a2|a3|a4|g2|n1)-[a-z0-9-]+")


@pytest.mark.parametrize(
    "offer",
    [o for o in OFFERS if o.provider == "gcp" and CATALOG.chip(o.chip_id).kind == "gpu"],
    ids=_offer_id,
)
def test_every_gcp_gpu_offer_is_a_whole_machine_named_by_region_and_type(
    offer: PriceOffer,
) -> None:
    assert _GCP_MACHINE.match(offer.instance), offer.instance
    assert offer.region.startswith(("us-", "europe-", "asia-")), offer.region
    assert "VM" in offer.note, "the note must show the VM part of the sum"


@pytest.mark.parametrize("offer", OFFERS, ids=_offer_id)
def test_no_offer_is_a_component_price(offer: PriceOffer) -> None:
    text = f"{offer.instance} {offer.note}".lower()
    assert "gpu part" not in text and "component only" not in text


def test_third_party_prices_are_low_confidence() -> None:
    for o in OFFERS:
        assert o.confidence in ("high", "medium", "low")
        if "third-party" in o.source:
            assert o.confidence == "low", _offer_id(o)


def test_a_chip_without_a_public_price_has_no_offer_and_a_source_saying_so() -> None:
    assert CATALOG.no_price, "tpu-v7 has no public price"
    for n in CATALOG.no_price:
        assert not CATALOG.offers_for(n.chip_id), n.chip_id
        assert len(n.source) > 3 and _ISO_DATE.fullmatch(n.date)


def test_consumer_cards_and_trainium2_have_a_sourced_rental_price() -> None:
    # issue 12: the consumer cards rent on community clouds and trn2 has an AWS price; without
    # an offer they vanish from every cost ranking
    for chip in ("rtx-4090", "rtx-5090", "trainium2"):
        offers = CATALOG.offers_for(chip)
        assert any(o.pricing == "on-demand" for o in offers), chip
        for o in offers:
            assert o.confidence in ("medium", "low"), _offer_id(o)


# AWS G5 (A10G) and G4dn (T4): a 1-GPU and an 8-GPU instance, on-demand and a 1-year
# reserved instance each, from the same dated copy of AWS's price list.
@pytest.mark.parametrize(("chip", "family"), [("a10g", "g5."), ("t4", "g4dn.")])
def test_aws_g_instances_are_priced_per_pricing_model(chip: str, family: str) -> None:
    offers = [o for o in CATALOG.offers_for(chip) if o.provider == "aws"]
    by_pricing = {(o.pricing, o.instance): o.usd_per_chip_hour for o in offers}
    assert {p for p, _ in by_pricing} == {"on-demand", "committed-1y"}
    assert all(i.startswith(family) for _, i in by_pricing)
    for (pricing, instance), usd in by_pricing.items():
        if pricing == "committed-1y":
            assert usd < by_pricing[("on-demand", instance)], instance
    # the 8-GPU machine carries more host per GPU than the smallest one
    eight = [i for _, i in by_pricing if i.endswith(("48xlarge", "metal"))]
    one = [i for _, i in by_pricing if i.endswith(".xlarge")]
    assert eight and one
    assert by_pricing[("on-demand", eight[0])] > by_pricing[("on-demand", one[0])]
