"""What it runs on: the chip catalog, cloud offers and purchase prices."""

from chipwise.hardware.catalog import Catalog, chip, chips, default_catalog, load_catalog
from chipwise.hardware.chip import (
    Chip,
    Interconnect,
    NoPublicPrice,
    PriceOffer,
    Purchase,
    SourcedFigure,
)
from chipwise.hardware.hypothetical import (
    HypotheticalChipError,
    UserChip,
    chip_option,
    derive_chip,
    load_chip_file,
    with_user_chips,
)

__all__ = [
    "Catalog",
    "Chip",
    "HypotheticalChipError",
    "Interconnect",
    "NoPublicPrice",
    "PriceOffer",
    "Purchase",
    "SourcedFigure",
    "UserChip",
    "chip",
    "chip_option",
    "chips",
    "default_catalog",
    "derive_chip",
    "load_catalog",
    "load_chip_file",
    "with_user_chips",
]
