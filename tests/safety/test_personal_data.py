"""The personal-data and secrets detectors: checked values found, look-alikes left, and a
preview that never holds the value."""

from __future__ import annotations

import pytest
from stdnum import iban, luhn

from arbiter.safety.credentials import is_placeholder, scan_secrets, shannon_entropy
from arbiter.safety.pii import luhn_valid, scan_pii


def _card(prefix: str, length: int = 16) -> str:
    body = (prefix + "3" * length)[: length - 1]
    return body + luhn.calc_check_digit(body)


VISA = _card("4556")
SPACED_VISA = f"{VISA[:4]} {VISA[4:8]} {VISA[8:12]} {VISA[12:]}"
IBAN_DE = "DE" + iban.calc_check_digits("DE00500105175407324931") + "500105175407324931"


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("Write to olga.petrova@yandex.ru today.", "email", "olga.petrova@yandex.ru"),
        ("Her mobile: +49 151 23456789", "phone", "+49 151 23456789"),
        ("Call (617) 253-1000 for the office.", "phone", "(617) 253-1000"),
        (f"Card {SPACED_VISA} exp 09/29", "payment_card", SPACED_VISA),
        (f"Pay to {IBAN_DE}.", "iban", IBAN_DE),
        ("SSN 536-90-4399 on file.", "national_id", "536-90-4399"),
        ("Codice fiscale RSSMRA85T10A562S", "national_id", "RSSMRA85T10A562S"),
        ("BSN: 111222333", "national_id", "111222333"),
    ],
)
def test_personal_data_is_found_with_a_redacted_preview(
    text: str, category: str, value: str
) -> None:
    findings = [f for f in scan_pii(text).findings if f.category == category]
    assert findings
    assert findings[0].severity in ("medium", "high")
    start, end = findings[0].span
    assert text[start:end] == value
    dump = findings[0].model_dump_json()
    assert value not in dump
    assert value.replace(" ", "") not in dump


@pytest.mark.parametrize(
    "text",
    [
        "Release 2023-11-04, build 20231104.0917",
        "Host 10.20.30.40 answered in 12 ms",
        "ISBN 978-3-16-148410-0",
        "Avatar icon@3x.png and git@gitlab.com:team/repo.git",
        "The ratio was 0.4556333333333333 overall.",
        "Order 4556 3333 3333 3334 shipped.",  # fails the Luhn check
        "Invoice 2024-000981, ticket 3312-2201-4459",
    ],
)
def test_numbers_that_are_no_personal_data_are_not_flagged(text: str) -> None:
    assert [f for f in scan_pii(text).findings if f.severity != "low"] == []


def test_a_published_test_card_is_recorded_low() -> None:
    (finding,) = scan_pii("Use 4242 4242 4242 4242 in the sandbox.").findings
    assert (finding.category, finding.severity) == ("payment_card", "low")


def test_a_bare_digit_run_is_a_card_only_when_a_card_is_named() -> None:
    assert scan_pii(f"id {VISA} in the log").findings[0].severity == "low"
    assert scan_pii(f"visa card {VISA}").findings[0].severity == "high"


def test_allowed_values_are_never_findings() -> None:
    text = "Reach us at Help@Acme.example or call +1 617 253 1000."
    assert scan_pii(text, allowed=["help@acme.example", "+1 617 253 1000"]).findings == []
    assert {f.category for f in scan_pii(text).findings} == {"email", "phone"}


def test_luhn_matches_the_reference_implementation() -> None:
    for number in ["4111111111111111", "79927398713", VISA, "1234567812345678"]:
        assert luhn_valid(number) is luhn.is_valid(number)


@pytest.mark.parametrize(
    ("text", "category", "secret"),
    [
        (
            "key: sk-proj-" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4bC6dE8",
            "api_key",
            "aB3dE5fG7hJ9kL1mN2pQ4",
        ),
        ("ghp_aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4", "api_key", "aB3dE5fG7hJ9kL1mN2pQ4"),
        ("AKIAQ3EGRTVWXYZ27B4C in the env", "api_key", "AKIAQ3EGRTVWXYZ27B4C"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n"
            "-----END OPENSSH PRIVATE KEY-----",
            "private_key",
            "b3BlbnNzaC1rZXk",
        ),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4eXoifQ.c2lnbmF0dXJlLXZhbHVl",
            "token",
            "c2lnbmF0dXJlLXZhbHVl",
        ),
        ("password = Blue-Finch7", "password", "Blue-Finch7"),
        ("redis://app:Xq7$mL2pz@cache.internal:6379/0", "password", "Xq7$mL2pz"),
        (
            "token issued: Zk3qW8rT5yU1iO9pA4sD7fG2hJ6kL0xC",
            "token",
            "Zk3qW8rT5yU1iO9pA4sD7fG2hJ6kL0xC",
        ),
    ],
)
def test_secrets_are_found_and_never_shown(text: str, category: str, secret: str) -> None:
    found = [f for f in scan_secrets(text).findings if f.category == category]
    assert found
    assert found[0].severity in ("medium", "high")
    assert secret not in scan_secrets(text).model_dump_json()


@pytest.mark.parametrize(
    "text",
    [
        "export OPENAI_API_KEY=sk-your-key-here",
        "AWS documents AKIAIOSFODNN7EXAMPLE as its sample key.",
        'db_password = "${DB_PASSWORD}"',
        "password: ********",
        "Set Authorization: Bearer <token>",
        "blob: 3q2+7wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/w==",
        "sha1 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
        "The password must be at least 12 characters.",
    ],
)
def test_placeholders_hashes_and_prose_are_no_secrets(text: str) -> None:
    assert [f for f in scan_secrets(text).findings if f.severity != "low"] == []


def test_entropy_and_placeholders() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("abab") == pytest.approx(1.0)
    assert is_placeholder("sk-xxxxxxxxxxxxxxxxxxxxxxxx")
    assert not is_placeholder("sk-aB3dE5fG7hJ9kL1mN2pQ4rS6")
