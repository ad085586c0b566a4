"""Loading a family's members (Hub id or local folder) into one :class:`Family`.

``Family`` gives every member's logits, log-probabilities or probabilities (float32) over the
shared tokenizer's vocabulary only: padded embedding rows (Pythia pads to 50,304+) are dropped
before any softmax. Members load through ``from_pretrained``, so a local folder and a Hub id take
the same path; ``get_family`` picks the embedded pico family or a Hub family by name.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import os
import warnings
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np
import torch

from apd.base.device import resolve_device
from apd.base.io import check_folder
from apd.family.logprobs import prompt_log_probs
from apd.family.registry import FamilySpec, MemberSpec, count_from_config, count_nonembedding, get_family_spec

_DTYPES = {
    "fp32": torch.float32,
    "float32": torch.float32,
    "float": torch.float32,
    "fp16": torch.float16,
    "float16": torch.float16,
    "half": torch.float16,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
}


def default_dtype(device: torch.device | str) -> torch.dtype:
    """fp32 on CPU; bf16 on CUDA where supported, else fp16."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def _resolve_dtype(dtype, device: torch.device) -> torch.dtype:
    if dtype is None:
        return default_dtype(device)
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str) and dtype.lower() in _DTYPES:
        return _DTYPES[dtype.lower()]
    raise ValueError(f"unknown dtype {dtype!r}; use a torch dtype or one of {sorted(_DTYPES)}.")


def needs_offload(member_bytes: Sequence[int], free_bytes: int, fraction: float = 0.8) -> bool:
    """True when the members' weights together exceed ``fraction`` of the free GPU memory
    (the rest is left for activations); then members wait on the CPU and visit the GPU in turn."""
    return sum(member_bytes) > fraction * free_bytes


def _is_local_folder(location: str) -> bool:
    return Path(location).expanduser().is_dir()


def _looks_like_path(location: str) -> bool:
    """A location that cannot be a Hub id ("org/name"): absolute, ./ ../ ~, or nested."""
    return os.path.isabs(location) or location.startswith((".", "~")) or location.count("/") > 1 or "\\" in location


def _offline_message(location: str, member: str, what: str, err: Exception) -> str:
    first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    offline = os.environ.get("HF_HUB_OFFLINE", "")
    why = (
        f"offline mode is on: HF_HUB_OFFLINE={offline}"
        if offline
        else "no network? set HF_HUB_OFFLINE=1 to skip the slow retries"
    )
    return (
        f"could not load the {what} of member {member!r} from the Hub id {location!r}: the Hugging "
        f"Face Hub could not be reached ({why}) and its files are not in the local cache, or the "
        f"id does not exist ({first_line}). To use a local copy, pass local_dir=FOLDER with one "
        f"save_pretrained subfolder per member (FOLDER/{member}), or "
        f"members={{{member!r}: '/path/to/folder'}}."
    )


def _from_pretrained(load, location: str, member: str, what: str, **kwargs):
    """``load(location, **kwargs)`` with errors that say what to do."""
    try:
        return load(location, **kwargs)
    except OSError as err:
        if _is_local_folder(location):
            raise FileNotFoundError(
                f"could not load the {what} of member {member!r} from the folder {location!r}: "
                f"{err}. The folder must be a save_pretrained folder (config.json, weights and "
                f"tokenizer files)."
            ) from err
        raise FileNotFoundError(_offline_message(location, member, what, err)) from err


def _check_location(location: str, member: str) -> str:
    location = str(location)
    if not _is_local_folder(location) and _looks_like_path(location):
        raise FileNotFoundError(
            f"the folder {location!r} for member {member!r} does not exist; pass an existing "
            f"save_pretrained folder or a Hub id such as 'EleutherAI/pythia-70m-deduped'."
        )
    return str(Path(location).expanduser()) if _is_local_folder(location) else location


def _read_manifest(local_dir: Path) -> list[str] | None:
    """Member names (smallest first) from ``local_dir/family.json``: a list of names, or
    ``{"members": [name | {"name": name, ...}, ...]}``. None if there is no manifest."""
    path = local_dir / "family.json"
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except ValueError as err:
        raise ValueError(
            f"{path} is damaged ({err}); rebuild the family (apd.get_family or "
            f"apd.family.pico.build sets it aside and rewrites it)."
        ) from None
    items = data.get("members") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise ValueError(
            f"{path} must hold a list of member names (smallest first) or {{'members': [...]}}; "
            f"got {type(items).__name__}."
        )
    names = [it["name"] if isinstance(it, dict) else it for it in items]
    if not all(isinstance(n, str) for n in names):
        raise ValueError(f"{path}: every member must be a name string or {{'name': ...}}; got {names}.")
    return names


def _member_locations(spec: FamilySpec, members, local_dir) -> tuple[dict[str, str], bool]:
    """{name: location} in the requested order, and whether to sort them by counted size."""
    local = Path(local_dir).expanduser() if local_dir is not None else None
    if local is not None and not local.is_dir():
        raise FileNotFoundError(
            f"local_dir {str(local)!r} is not a folder; pass the folder that holds one "
            f"save_pretrained subfolder per member."
        )
    if isinstance(members, Mapping):
        if local is not None:
            raise ValueError(
                "pass either members={name: location} or local_dir=FOLDER, not both: a dict "
                "already says where every member is."
            )
        if not members:
            raise ValueError("members is an empty dict; give at least one {name: location}.")
        if spec.all_members():  # registered family: names must be known (Hub ids map to names)
            return {spec.member(str(k)).name: str(v) for k, v in members.items()}, False
        return {str(k): str(v) for k, v in members.items()}, False
    if members is not None and (isinstance(members, str) or not isinstance(members, Sequence)):
        raise TypeError(
            f"members must be a list of member names or a dict name -> folder/Hub id, got {type(members).__name__}."
        )
    if members is not None and len(members) == 0:
        raise ValueError("members is empty; give at least one member name.")
    if members is not None:
        dupes = sorted({str(m) for m in members if list(members).count(m) > 1})
        if dupes:
            raise ValueError(
                f"members lists {', '.join(map(repr, dupes))} more than once; give each member once, smallest first."
            )

    if not spec.all_members():  # pico-like: the members are whatever local_dir holds
        if local is None:
            raise ValueError(
                f"the {spec.name!r} family has no Hub copy: its members are trained locally "
                f"(apd.family.pretrain). Pass local_dir=FOLDER (one save_pretrained subfolder per member, "
                f"optionally a family.json listing them smallest first) or members={{name: folder}}."
            )
        manifest = _read_manifest(local)
        found = sorted(p.name for p in local.iterdir() if (p / "config.json").exists())
        available = manifest if manifest is not None else found
        if not available:
            raise FileNotFoundError(
                f"no member folders (subfolders with config.json) in {str(local)!r}; train the "
                f"family with apd.family.pretrain or point local_dir at its output folder."
            )
        names = list(members) if members is not None else available
        for name in names:
            if name not in available:
                raise ValueError(
                    f"unknown member {name!r} of family {spec.name!r} in {str(local)!r}; known "
                    f"members: {', '.join(available)}."
                )
        sort = members is None and manifest is None
    else:
        names = [spec.member(n).name for n in members] if members is not None else list(spec.names)
        sort = False
    locations = {}
    for name in names:
        if local is not None:
            folder = local / name
            if not folder.is_dir():
                subs = sorted(p.name for p in local.iterdir() if p.is_dir())
                raise FileNotFoundError(
                    f"member {name!r} has no folder in local_dir: expected {str(folder)!r} "
                    f"(found subfolders: {', '.join(subs) or 'none'}). Save each member there with "
                    f"save_pretrained, or pass members={{name: path}}."
                )
            if not check_folder(folder, "pico member", "stopping"):
                raise ValueError(
                    f"member {name!r} in {str(local)!r} was damaged (its files no longer match the digests "
                    f"recorded when it was saved) and has been set aside; rebuild it with apd.get_family(...) "
                    f"or apd.family.pico.build(...), which retrains the missing member."
                )
            locations[name] = str(folder)
        else:
            locations[name] = spec.member(name).hub_id
    return locations, sort


def _vocab_difference(a: dict, b: dict, limit: int = 5) -> str:
    only_a = sorted(set(a) - set(b), key=a.get)
    only_b = sorted(set(b) - set(a), key=b.get)
    moved = sorted((t for t in set(a) & set(b) if a[t] != b[t]), key=a.get)
    parts = [f"{len(a)} vs {len(b)} tokens"]
    if only_a:
        parts.append(f"{len(only_a)} tokens only in the first (e.g. {only_a[:limit]})")
    if only_b:
        parts.append(f"{len(only_b)} tokens only in the second (e.g. {only_b[:limit]})")
    if moved:
        parts.append(f"{len(moved)} tokens with different ids (e.g. {[(t, a[t], b[t]) for t in moved[:limit]]})")
    return "; ".join(parts)


class Family:
    """Members of one family over one shared tokenizer; batched logits of every member.

    Built by ``load_family``. Attributes: ``spec`` (FamilySpec), ``names`` (smallest first),
    ``members`` (MemberSpec per member with the location, counted non-embedding count and x value
    actually used), ``locations`` {name: Hub id or folder}, ``n_nonembedding`` (int64 array),
    ``log_sizes`` (float64 array, natural log of non-embedding count, strictly increasing),
    ``tokenizer`` (it pads on the left, so that a padded batch can be generated from), ``vocab_size``
    (tokenizer vocabulary; every output is restricted to it),
    ``device`` (where computation and outputs live), ``dtype`` (of the weights), ``offload``
    (True: members wait on the CPU and visit ``device`` one at a time), ``alm``/``elm`` (names of
    the smallest / largest member).

    Models load lazily on first use. All batched methods take ``input_ids`` (batch, seq) int64
    (a 1-D tensor is one sequence) and an optional ``attention_mask`` of the same shape (1 = real
    token; left or right padding both work; positions are counted from the first real token).
    Values at padded positions (mask 0) are meaningless: mask them out.

    Example:
        >>> import apd
        >>> fam, _ = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> enc = fam.tokenizer(["Ada was born in"], return_tensors="pt")
        >>> fam.next_token_log_probs(enc.input_ids, enc.attention_mask).shape == (len(fam), 1, fam.vocab_size)
        True
    """

    def __init__(self, spec, members, tokenizer, vocab_size, device, dtype, offload, hub_kwargs):
        self.spec = spec
        self.members = tuple(members)
        self.names = tuple(m.name for m in self.members)
        self.locations = {m.name: m.hub_id for m in self.members}
        self.n_nonembedding = np.array([m.n_nonembedding for m in self.members], dtype=np.int64)
        self.log_sizes = np.array([m.log_size for m in self.members], dtype=np.float64)
        self.tokenizer = tokenizer
        self.vocab_size = int(vocab_size)
        self.device = torch.device(device)
        self.dtype = dtype
        self.offload = bool(offload)
        self._hub_kwargs = dict(hub_kwargs)
        self._models: dict[str, torch.nn.Module] = {}

    def __getstate__(self) -> dict:
        """Pickled without its loaded models (a worker process loads them again on use)."""
        return {**self.__dict__, "_models": {}}

    # -- members ------------------------------------------------------------------------------
    @property
    def alm(self) -> str:
        """Name of the smallest member (the amateur LM)."""
        return self.names[0]

    @property
    def elm(self) -> str:
        """Name of the largest member (the expert LM)."""
        return self.names[-1]

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        rows = ", ".join(f"{n} (x={x:.4f})" for n, x in zip(self.names, self.log_sizes))
        return (
            f"Family({self.spec.name!r}: {rows}; vocab {self.vocab_size}, {self.device}, "
            f"{str(self.dtype).replace('torch.', '')}{', offload' if self.offload else ''})"
        )

    def table(self):
        """A pandas DataFrame: name, location, non-embedding count, log size (the x-axis)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "member": self.names,
                "location": [self.locations[n] for n in self.names],
                "n_nonembedding": self.n_nonembedding,
                "log_size": self.log_sizes,
            }
        )

    def _check_names(self, members) -> list[str]:
        if members is None:
            return list(self.names)
        if isinstance(members, str):
            members = [members]
        for name in members:
            if name not in self.names:
                raise ValueError(
                    f"{name!r} is not a member of this loaded family; loaded members: {', '.join(self.names)}."
                )
        return list(members)

    def model(self, name: str) -> torch.nn.Module:
        """The HF causal LM of a member in eval mode, loaded on first use. It lives on ``device``,
        or on the CPU when ``offload`` is True (use ``on_device`` to run it)."""
        self._check_names([name])
        if name not in self._models:
            self._models[name] = self._load(name)
        return self._models[name]

    def _load(self, name: str) -> torch.nn.Module:
        from transformers import AutoModelForCausalLM

        location = self.locations[name]
        model = _from_pretrained(
            AutoModelForCausalLM.from_pretrained,
            location,
            name,
            "model",
            torch_dtype=self.dtype,
            **self._hub_kwargs,
        )
        model.eval()
        counted = count_nonembedding(model, self.spec.count_untied_unembedding)
        expected = int(self.n_nonembedding[self.names.index(name)])
        if counted != expected:
            raise ValueError(
                f"member {name!r} loaded from {location!r} has {counted:,} non-embedding "
                f"parameters, but its config described {expected:,}; the folder's weights and "
                f"config.json disagree: save the model again with save_pretrained."
            )
        rows = model.get_output_embeddings().weight.shape[0]
        if rows < self.vocab_size:
            raise ValueError(
                f"member {name!r} has {rows} output rows but the tokenizer has {self.vocab_size} "
                f"tokens; the tokenizer does not belong to this model."
            )
        home = torch.device("cpu") if self.offload else self.device
        return model.to(home)

    @contextlib.contextmanager
    def on_device(self, name: str):
        """Context manager: the member's model on ``device`` (moved there and back if offloaded)."""
        model = self.model(name)
        moved = self.offload and self.device.type != "cpu"
        if moved:
            model.to(self.device)
        try:
            yield model
        finally:
            if moved:
                model.to("cpu")
                if self.device.type == "cuda":
                    torch.cuda.empty_cache()

    def unload(self, members=None) -> None:
        """Forget loaded models (all, or the named ones) to free memory; they reload on use."""
        for name in self._check_names(members):
            self._models.pop(name, None)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    # -- batched outputs ----------------------------------------------------------------------
    def _prepare(self, input_ids, attention_mask):
        ids = torch.as_tensor(input_ids)
        if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise TypeError(f"input_ids must be integer token ids, got dtype {ids.dtype}.")
        if ids.dim() == 1:
            ids = ids[None]
        if ids.dim() != 2 or ids.shape[1] == 0:
            raise ValueError(f"input_ids must have shape (batch, seq) with seq >= 1, got {tuple(ids.shape)}.")
        ids = ids.long()
        if ids.numel() and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(
                f"token ids must lie in [0, {self.vocab_size}) (the tokenizer's vocabulary), got "
                f"min {int(ids.min())}, max {int(ids.max())}; tokenize with family.tokenizer."
            )
        if attention_mask is None:
            mask = torch.ones_like(ids)
        else:
            mask = torch.as_tensor(attention_mask)
            if mask.dim() == 1:
                mask = mask[None]
            if mask.shape != ids.shape:
                raise ValueError(
                    f"attention_mask shape {tuple(mask.shape)} differs from input_ids shape {tuple(ids.shape)}."
                )
            if not ((mask == 0) | (mask == 1)).all():
                raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token).")
            mask = mask.long()
            if (mask.sum(-1) == 0).any():
                raise ValueError("a row of attention_mask is all 0: every sequence needs a real token.")
        return ids, mask

    @staticmethod
    def _last_positions(mask: torch.Tensor) -> torch.Tensor:
        """Index of the last real token of every row (works for left and right padding)."""
        seq = mask.shape[1]
        return seq - 1 - mask.flip(-1).argmax(-1)

    @torch.no_grad()
    def _forward(self, model, ids, mask, last_only: bool) -> torch.Tensor:
        """float32 logits restricted to the vocabulary: (batch, seq, V), or (batch, V) if last_only."""
        dev = next(model.parameters()).device
        ids, mask = ids.to(dev), mask.to(dev)
        kwargs = {"input_ids": ids, "attention_mask": mask}
        accepted = inspect.signature(model.forward).parameters
        if "position_ids" in accepted:
            kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
        if last_only:
            last = self._last_positions(mask)
            keep = ids.shape[1] - int(last.min())
            if "logits_to_keep" in accepted:
                kwargs["logits_to_keep"] = keep
            logits = model(**kwargs).logits  # the last logits.shape[1] positions
            rows = torch.arange(ids.shape[0], device=dev)
            out = logits[rows, last - (ids.shape[1] - logits.shape[1]), : self.vocab_size]
        else:
            out = model(**kwargs).logits[..., : self.vocab_size]
        return out.float().to(self.device)

    def iter_member_logits(self, input_ids, attention_mask=None, members=None) -> Iterator[tuple[str, torch.Tensor]]:
        """Yield (name, logits (batch, seq, V) float32) one member at a time, smallest first;
        only one member is on the GPU at a time when offloading."""
        ids, mask = self._prepare(input_ids, attention_mask)  # validate before the first yield
        names = self._check_names(members)

        def stream():
            for name in names:
                with self.on_device(name) as model:
                    logits = self._forward(model, ids, mask, last_only=False)
                yield name, logits

        return stream()

    def logits(self, input_ids, attention_mask=None, members=None) -> torch.Tensor:
        """Logits of every member: float32 (n_members, batch, seq, V) on ``device``."""
        return torch.stack([lg for _, lg in self.iter_member_logits(input_ids, attention_mask, members)])

    def log_probs(self, input_ids, attention_mask=None, members=None) -> torch.Tensor:
        """Log-probabilities (log-softmax over V) of every member: (n_members, batch, seq, V)."""
        return torch.log_softmax(self.logits(input_ids, attention_mask, members), dim=-1)

    def next_token_logits(self, input_ids, attention_mask=None, members=None) -> torch.Tensor:
        """Logits for the token after each row's last real token: float32 (n_members, batch, V)."""
        ids, mask = self._prepare(input_ids, attention_mask)
        out = []
        for name in self._check_names(members):
            with self.on_device(name) as model:
                out.append(self._forward(model, ids, mask, last_only=True))
        return torch.stack(out)

    def next_token_log_probs(self, input_ids, attention_mask=None, members=None) -> torch.Tensor:
        """Log-softmax over V of ``next_token_logits``: (n_members, batch, V)."""
        return torch.log_softmax(self.next_token_logits(input_ids, attention_mask, members), dim=-1)

    def next_token_probs(self, input_ids, attention_mask=None, members=None) -> torch.Tensor:
        """Softmax over V of ``next_token_logits``: (n_members, batch, V); rows sum to 1."""
        return torch.softmax(self.next_token_logits(input_ids, attention_mask, members), dim=-1)

    def prompt_log_probs(self, prompts, batch_size: int = 64, members=None, progress: bool = False) -> np.ndarray:
        """Next-token log-probabilities right after each text prompt: float32 numpy
        ``(n_members, len(prompts), V)`` (see ``prompt_log_probs`` at module level)."""
        return prompt_log_probs(self, prompts, batch_size, members=members, progress=progress)


def _count_members(spec: FamilySpec, locations: Mapping[str, str], hub_kwargs: dict):
    """Non-embedding and total parameter counts and output rows of every member, counted from each
    config on the meta device (no weights are loaded)."""
    from transformers import AutoConfig

    counts, totals, out_rows = {}, {}, {}
    for n, loc in locations.items():
        config = _from_pretrained(AutoConfig.from_pretrained, loc, n, "config", **hub_kwargs)
        counts[n], totals[n], out_rows[n] = count_from_config(config, spec.count_untied_unembedding, hub_kwargs)
    return counts, totals, out_rows


def _given_log_sizes(log_sizes: Sequence[float], names: list[str]) -> list[float]:
    """The x-axis given by hand: one finite float per member."""
    xs = [float(v) for v in log_sizes]
    if len(xs) != len(names) or not all(math.isfinite(v) for v in xs):
        raise ValueError(
            f"log_sizes must hold one finite float per member ({len(names)}: {names}), got {list(log_sizes)}."
        )
    return xs


def _registry_log_sizes(
    spec: FamilySpec,
    names: list[str],
    locations: Mapping[str, str],
    counts: dict,
    check_sizes: bool,
    size_tolerance: float,
) -> list[float]:
    """The x-axis: the registry's value of a registered member (after checking the counted size
    against it), ln of the counted size otherwise."""
    xs = []
    for n in names:
        registered = spec.member(n) if spec.all_members() else None
        counted_x = math.log(counts[n])
        if check_sizes and registered is not None and registered.n_nonembedding:
            ref_x = math.log(registered.n_nonembedding)
            if abs(counted_x - ref_x) > size_tolerance:
                raise ValueError(
                    f"member {n!r} at {locations[n]!r} has {counts[n]:,} non-embedding "
                    f"parameters (ln = {counted_x:.4f}), but the {spec.name} registry says "
                    f"{registered.n_nonembedding:,} (ln = {ref_x:.4f}). If this is meant to "
                    f"be a different model under this name, pass check_sizes=False (x-axis = "
                    f"ln of the counted sizes) or log_sizes=[...] (your own x-axis)."
                )
            xs.append(registered.x)
        else:
            xs.append(counted_x)
    return xs


def _check_increasing(names: list[str], xs: list[float]) -> None:
    order_ok = all(b > a for a, b in zip(xs, xs[1:]))
    if not order_ok:
        listing = ", ".join(f"{n} (x={x:.4f})" for n, x in zip(names, xs))
        smallest_first = [n for _, n in sorted(zip(xs, names))]
        raise ValueError(
            f"log sizes must be strictly increasing from the first member to the last, got: "
            f"{listing}. List the members smallest first ({smallest_first}) and do not use two "
            f"models of the same size."
        )


def _shared_tokenizer(names: list[str], locations: Mapping[str, str], out_rows: dict, hub_kwargs: dict):
    """The members' one tokenizer (each distinct location loaded once, vocabularies compared), set to
    pad on the left, and its vocabulary size, which every member's output rows must cover."""
    from transformers import AutoTokenizer

    tokenizers, vocab0 = {}, None
    for n in names:
        loc = locations[n]
        if loc not in tokenizers:
            tokenizers[loc] = _from_pretrained(AutoTokenizer.from_pretrained, loc, n, "tokenizer", **hub_kwargs)
        vocab = tokenizers[loc].get_vocab()
        if vocab0 is None:
            vocab0 = vocab
        elif vocab != vocab0:
            raise ValueError(
                f"members {names[0]!r} and {n!r} have different tokenizers ("
                f"{_vocab_difference(vocab0, vocab)}). Their probabilities cannot be compared token "
                f"by token: use members of one family, which share one tokenizer."
            )
    tokenizer = tokenizers[locations[names[0]]]
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token  # for padding=True; attention_mask does the work
    tokenizer.padding_side = "left"  # a padded batch ends every prompt at the last column, as generation needs
    vocab_size = max(vocab0.values()) + 1
    for n in names:
        if out_rows[n] < vocab_size:
            raise ValueError(
                f"member {n!r} has {out_rows[n]} output rows but the tokenizer has {vocab_size} "
                f"tokens; the tokenizer does not belong to this model."
            )
    return tokenizer, vocab_size


def _decide_offload(offload: bool | None, device: torch.device, dtype: torch.dtype, totals: list[int]) -> bool:
    """Whether members wait on the CPU and visit the GPU one at a time (None: from their sizes)."""
    if device.type == "cuda" and offload is None:
        free, _ = torch.cuda.mem_get_info(device)
        need = [total * torch.tensor([], dtype=dtype).element_size() for total in totals]
        offload = needs_offload(need, free)
        if max(need) > 0.8 * free:
            warnings.warn(
                f"the largest member needs ~{max(need) / 2**30:.1f} GiB in {dtype} but the GPU has "
                f"{free / 2**30:.1f} GiB free; it may not fit even alone.",
                stacklevel=3,
            )
    return bool(offload) and device.type != "cpu"


def load_family(
    name: str,
    members: Sequence[str] | Mapping[str, str] | None = None,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    *,
    local_dir: str | os.PathLike | None = None,
    check_sizes: bool = True,
    log_sizes: Sequence[float] | None = None,
    size_tolerance: float = 1e-3,
    offload: bool | None = None,
    hub_kwargs: Mapping | None = None,
) -> Family:
    """Load a family's members (lazily), its shared tokenizer and its x-axis.

    Args:
        name: "pythia", "opt", "qwen1.5" (or "qwen") or "pico".
        members: None (the family's members; for pico, the members found in ``local_dir``), a
            list of member names (reference members such as "pythia-12b-deduped" allowed) in size
            order, or a dict {name: Hub id or folder} to load members from elsewhere (for pico any
            names).
        device: default cuda if available else cpu.
        dtype: fp32 on CPU, bf16 (else fp16) on CUDA by default.
        local_dir: a folder with one ``save_pretrained`` subfolder per member name (for pico, plus
            an optional ``family.json`` listing the names smallest first; without it, members are
            sorted by their counted size).
        check_sizes: count every member's non-embedding parameters from its config (meta device,
            no weights loaded) and raise if a registered member's count differs from the registry
            by more than ``size_tolerance`` in natural log. The x-axis is then the registry's value
            (the release's number). With check_sizes=False the x-axis is ln(counted) for every
            member: use it for custom models under registered names (e.g. tiny test models).
        log_sizes: set the x-axis explicitly (one float per member, smallest first); skips the
            check.
        offload: on CUDA, whether members wait on the CPU and visit the GPU one at a time; None
            decides from parameter counts vs ``torch.cuda.mem_get_info`` (``needs_offload``).
        hub_kwargs: passed to every ``from_pretrained`` (e.g. cache_dir, revision,
            local_files_only).

    Raises:
        ValueError: unknown family/member, sizes not strictly increasing, tokenizers differ, size
            mismatch.
        FileNotFoundError: missing folder; Hub unreachable and nothing cached.

    Example (Pythia from the Hub; a folder of local copies works the same with ``local_dir``):
        >>> fam = load_family("pythia", members=["pythia-70m-deduped", "pythia-410m-deduped"])  # doctest: +SKIP
        >>> fam.log_sizes                                                                         # doctest: +SKIP
        array([16.7555, 19.527 ])
    """
    spec = get_family_spec(name)
    hub_kwargs = dict(hub_kwargs or {})
    locations, sort_by_size = _member_locations(spec, members, local_dir)
    locations = {n: _check_location(loc, n) for n, loc in locations.items()}
    device = resolve_device(device)
    dtype = _resolve_dtype(dtype, device)
    counts, totals, out_rows = _count_members(spec, locations, hub_kwargs)
    names = list(locations)
    if sort_by_size:
        names.sort(key=counts.get)
    if log_sizes is not None:
        xs = _given_log_sizes(log_sizes, names)
    else:
        xs = _registry_log_sizes(spec, names, locations, counts, check_sizes, size_tolerance)
    _check_increasing(names, xs)
    tokenizer, vocab_size = _shared_tokenizer(names, locations, out_rows, hub_kwargs)
    offload = _decide_offload(offload, device, dtype, [totals[n] for n in names])
    loaded = [
        MemberSpec(n, locations[n], counts[n], x, spec.member(n).role if spec.all_members() else "member")
        for n, x in zip(names, xs)
    ]
    return Family(spec, loaded, tokenizer, vocab_size, device, dtype, offload, hub_kwargs)
