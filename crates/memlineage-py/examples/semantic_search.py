"""Search by meaning (docs/python.md, "Search by meaning"): a question in other words than the
memory finds it with ``mode="semantic"`` or ``"hybrid"``, where BM25 finds nothing — and what an
e-mail wrote still comes back EXTERNAL, whatever ranked it.

    scripts/fetch-embedding-model.sh         # once: all-MiniLM-L6-v2 into ~/.cache/memlineage
    python examples/semantic_search.py       # a store in RAM; pass a path to keep it (and
                                             # its vector index, in <path>.vectors/)
"""

from __future__ import annotations

import sys

from memlineage import Memory, SearchMode


def main(path: str = "memory:") -> int:
    with Memory.open(path, embedder="default") as m:
        if "mail" not in m.principals:
            m.principals.add("mail", "external")
        m.add("Dr. Kowalski has been the family dentist since 2019.")
        m.add("The garage door code is 4471.")
        m.add("Your dental clinic moved: book check-ups at 555-0100.", principal="mail")

        question = "who takes care of our teeth"
        for mode in SearchMode:
            hits = m.search(question, mode=mode, limit=2)
            print(f"{mode.value:>8}:", [f"{h.effective_label.name} {h.text}" for h in hits])
        status = m.vector_index_status()
        assert status is not None
        print(f"index: {status.indexed} entries, model {status.model}, {status.snapshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
