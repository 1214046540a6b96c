"""Argument errors of the native module as :class:`~memlineage.InputError`.

PyO3 converts each argument of a native call to its Rust type and raises ``TypeError`` (a
wrong type) or ``OverflowError`` (a number out of range, e.g. a negative limit) when it cannot.
Every error of memlineage is a :class:`~memlineage.Error`, so the public calls that pass user
values to the native module re-raise those as :class:`~memlineage.InputError`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from .errors import Error, InputError

P = ParamSpec("P")
R = TypeVar("R")


def checked(f: Callable[P, R]) -> Callable[P, R]:
    """``f`` with ``TypeError`` / ``OverflowError`` raised as :class:`InputError`."""

    @functools.wraps(f)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return f(*args, **kwargs)
        except (TypeError, OverflowError) as e:
            if isinstance(e, Error):
                raise
            raise InputError(f"invalid argument to {f.__name__}(): {e}") from e

    return call
