"""Schemathesis against the served /openapi.json: generated requests for every operation never
get a 5xx, and every response matches the schema the spec declares (status code, content
type, body). Bounded: a few examples per operation, derandomized."""

from __future__ import annotations

import pytest

pytest.importorskip("schemathesis")

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from serving import serve_app

STAFF = "tk_schemathesis-staff"


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.mark.slow
def test_api_matches_its_schema(demo_store) -> None:
    app = serve_app(demo_store.path, {STAFF: "staff"}, anonymous=True)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=10, deadline=None, derandomize=True,
            suppress_health_check=list(HealthCheck), database=None,
        )  # fmt: skip
        def run(case) -> None:
            case.call_and_validate(checks=CHECKS)
            # the same with a staff key: staff sees more, still by the schema
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {STAFF}"}
            case.call_and_validate(checks=CHECKS)

        run()
