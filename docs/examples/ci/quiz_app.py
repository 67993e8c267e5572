"""Two versions of a capitals quiz for docs/ci.md: v2 answers the largest city instead."""

CAPITALS = {
    "France": "Paris",
    "Japan": "Tokyo",
    "Peru": "Lima",
    "Kenya": "Nairobi",
    "Norway": "Oslo",
    "Italy": "Rome",
    "Canada": "Ottawa",
    "Australia": "Canberra",
    "Brazil": "Brasília",
    "Turkey": "Ankara",
    "Nigeria": "Abuja",
    "Switzerland": "Bern",
}
LARGEST = {
    "Canada": "Toronto",
    "Australia": "Sydney",
    "Brazil": "São Paulo",
    "Turkey": "Istanbul",
    "Nigeria": "Lagos",
    "Switzerland": "Zürich",
}


def v1(input: dict[str, str]) -> str:
    return CAPITALS[input["country"]]


def v2(input: dict[str, str]) -> str:
    return LARGEST.get(input["country"], CAPITALS[input["country"]])
