"""The results keys the paper's claims read from a chapter, for the chapter modules' tests."""

from apd.report.claims import paper_claims


def keys_read(stem: str) -> set[str]:
    """The JSON keys (not table cells) that ``apd.report.claims`` reads from chapter ``stem``."""
    out = set()
    for claim in paper_claims():
        for spec in claim.evidence:
            if spec.stem == stem:
                out |= {k for k in spec.keys if isinstance(k, str)} | ({spec.reason_key} - {None})
    return out
