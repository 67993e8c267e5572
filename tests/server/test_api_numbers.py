"""``POST /v1/arbitrate`` refuses numbers JSON cannot hold (NaN, Infinity, 1e999) in its
metadata with a 422 naming the field, instead of storing them as null."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.server.test_api_core import BROKEN


@pytest.mark.parametrize(
    ("metadata", "where"),
    [
        ('{"score": NaN}', "'score'"),
        ('{"score": Infinity}', "'score'"),
        ('{"score": -Infinity}', "'score'"),
        ('{"score": 1e999}', "'score'"),
        ('{"runs": [1, {"cost": 1e400}]}', "'runs[1].cost'"),
    ],
)
def test_a_number_json_cannot_hold_is_a_422_naming_the_field(
    client: TestClient, metadata: str, where: str
) -> None:
    before = client.get("/v1/verdicts").json()["total"]
    body = ('{"task": "t", "context": "c", "output": "o", "metadata": ' + metadata + "}").encode()
    answer = client.post(
        "/v1/arbitrate", content=body, headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["field"] == "body.metadata"
    assert where in error["message"]
    assert "JSON cannot represent" in error["message"]
    assert client.get("/v1/verdicts").json()["total"] == before


def test_finite_numbers_in_metadata_are_kept(client: TestClient) -> None:
    made = client.post("/v1/arbitrate", json={**BROKEN, "metadata": {"score": 1e308, "n": -0.5}})
    assert made.status_code == 201
    assert made.json()["case"]["metadata"] == {"score": 1e308, "n": -0.5}
