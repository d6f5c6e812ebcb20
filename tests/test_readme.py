"""The README's usage snippet runs as written (on the CPU its ``impl="auto"`` calls take the torch arm) and returns
what the README says: ids with a ``-1`` tail, flags with a 1 at each selected block, the producer's window, the decode
step's blocks."""
import pathlib
import re

import torch

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_snippet_runs_and_returns_what_it_says():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) == 1, "the README has one usage snippet"
    ns: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)
    ids, flags, top, blocks_, ends, out = (ns[n] for n in ("ids", "flags", "top", "blocks", "ends", "out"))
    assert ids.shape == (4, 64) and ids.dtype == torch.int32 and flags.shape == (4, 262144 // 8 + 1)
    assert (ids[2] == -1).all() and (ids[0] >= 0).all() and int(ids[0].max()) < 4096 // 8  # the empty row; extents
    for r in range(4):
        sel = ids[r][ids[r] >= 0].long()
        want = torch.zeros(flags.shape[1], dtype=torch.uint8)
        want[sel] = 1
        assert torch.equal(flags[r].cpu(), want), f"row {r}"
    assert top.shape == (4, 64) and (top[2] == -1).all() and int(top[0].max()) < 512
    assert ends.tolist() == [4998, 4999, 5000, 698, 699, 700]
    for r, e in enumerate(ends.tolist()):  # the producer wrote the window and nothing past it
        assert not out[r, :e].isnan().any() and out[r, e:].isnan().all(), f"row {r}"
    assert blocks_.shape == (6, 64) and int(blocks_[3].max()) < -(-700 // 8)
    step = ns["step"]  # the two-launch step picks the blocks of the separate passes over the same logits
    assert torch.equal(step.candidates.sort(1).values, blocks_.sort(1).values)
    assert step.flags.shape == (6, 8192 // 8 + 1) and int(step.flags.sum()) == int((blocks_ >= 0).sum())
