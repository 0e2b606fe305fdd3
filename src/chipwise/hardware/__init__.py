"""What it runs on: the chip catalog, cloud offers and purchase prices."""

from chipwise.hardware.catalog import Catalog, chip, chips, default_catalog, load_catalog
from chipwise.hardware.chip import Chip, Interconnect, PriceOffer, Purchase, SourcedFigure

__all__ = [
    "Catalog",
    "Chip",
    "Interconnect",
    "PriceOffer",
    "Purchase",
    "SourcedFigure",
    "chip",
    "chips",
    "default_catalog",
    "load_catalog",
]
