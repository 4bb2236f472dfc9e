"""Let Connexion 3.3 load our OpenAPI 3.1 document.

Connexion validates documents against its bundled 3.0 meta-schema and refuses 3.1 (upstream
issue #1396). For 3.1 documents we validate with openapi-spec-validator instead, which knows
3.1; every other version keeps Connexion's own check.
"""

from __future__ import annotations

from typing import Any

from connexion.spec import OpenAPISpecification
from openapi_spec_validator import validate

_original = OpenAPISpecification._validate_spec


def _validate_spec(cls: type[OpenAPISpecification], spec: dict[str, Any]) -> None:
    if str(spec.get("openapi", "")).startswith("3.1."):
        validate(spec)
        return
    _original.__func__(cls, spec)


def allow_openapi_31() -> None:
    OpenAPISpecification._validate_spec = classmethod(_validate_spec)
