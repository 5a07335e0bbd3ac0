"""The licence and citation files say what pyproject.toml and the benchmarks' own BibTeX say: Apache-2.0, the
three papers with their titles, authors' count and arXiv ids; the README's Cite section carries each
benchmark's BibTeX as its dataset cards do."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from audioeval.benchmarks.adu_bench import about as adu
from audioeval.benchmarks.alice import about as alice
from audioeval.benchmarks.audioicl_bench import about as audioicl

ROOT = Path(__file__).resolve().parents[2]
ABOUTS = (alice, audioicl, adu)


def _field(bibtex: str, name: str) -> str | None:
    found = re.search(rf"^\s*{name}\s*=\s*\{{(.*)\}},?\s*$", bibtex, re.M)
    return found.group(1) if found else None


def test_license_is_the_apache_2_text_pyproject_declares():
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    assert "END OF TERMS AND CONDITIONS" in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()


def test_citation_cff_lists_the_three_papers_as_their_bibtex_does():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "Apache-2.0" and cff["type"] == "software"
    version = re.search(r'^version = "(.+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert cff["version"] == version
    references = {r["title"]: r for r in cff["references"]}
    for about in ABOUTS:
        title = _field(about.CITATION, "title").replace("{", "").replace("}", "")
        assert title in references, title
        reference = references[title]
        authors = _field(about.CITATION, "author").split(" and ")
        assert [f"{a['family-names']}, {a['given-names']}" for a in reference["authors"]] == authors
        assert reference["year"] == int(_field(about.CITATION, "year"))
        eprint = _field(about.CITATION, "eprint")
        ids = [i["value"] for i in reference.get("identifiers", [])]
        assert ids == ([f"arXiv:{eprint}"] if eprint else [])


def test_the_readme_cites_each_paper_with_its_bibtex():
    cite = (ROOT / "README.md").read_text().split("\n## Cite\n", 1)[1]
    for about in ABOUTS:
        assert about.CITATION in cite
        eprint = _field(about.CITATION, "eprint")
        if eprint:
            assert f"[arXiv:{eprint}](https://arxiv.org/abs/{eprint})" in cite
