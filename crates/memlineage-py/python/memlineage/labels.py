"""Trust labels, ordered as the lattice (paper §M4, ``docs/lineage.md``)."""

from __future__ import annotations

import enum


class Label(enum.IntEnum):
    """A trust label. Higher is less trusted, so ``max()`` over labels is the lattice join and
    ``label <= Label.DERIVED_TRUSTED`` reads "at least as trusted as DERIVED_TRUSTED"::

        TRUSTED < DERIVED_TRUSTED < DERIVED_UNTRUSTED < EXTERNAL
    """

    #: Written directly by a trusted principal, derived from nothing.
    TRUSTED = 0
    #: Derived, and every strong parent is trusted.
    DERIVED_TRUSTED = 1
    #: Derived, and some strong parent (or, under the strict fallback, a weak one) is untrusted.
    DERIVED_UNTRUSTED = 2
    #: Written by an external principal: a web page, an e-mail, a tool's output.
    EXTERNAL = 3

    @property
    def untrusted(self) -> bool:
        """``DERIVED_UNTRUSTED`` or ``EXTERNAL``."""
        return self >= Label.DERIVED_UNTRUSTED

    @classmethod
    def parse(cls, name: str | Label) -> Label:
        """The label named ``name`` (``"TRUSTED"`` … ``"EXTERNAL"``, any case)."""
        if isinstance(name, Label):
            return name
        try:
            return cls[name.strip().upper()]
        except KeyError:
            from .errors import InputError

            raise InputError(
                f"invalid label {name!r} (expected TRUSTED, DERIVED_TRUSTED, "
                "DERIVED_UNTRUSTED or EXTERNAL)"
            ) from None

    def __str__(self) -> str:
        return self.name


class TrustClass(str, enum.Enum):
    """A principal's trust class: its root entries are ``TRUSTED`` or ``EXTERNAL``."""

    TRUSTED = "trusted"
    EXTERNAL = "external"

    def __str__(self) -> str:
        return self.value
