"""``mag_like``: a generated heterogeneous graph shaped like OGB-MAG (ogbn-mag), at any size.

Node types ``paper``, ``author``, ``institution``, ``field_of_study`` and edge types
``("author", "affiliated_with", "institution")``, ``("author", "writes", "paper")``,
``("paper", "cites", "paper")``, ``("paper", "has_topic", "field_of_study")``, in the order and
with the names that PyG's ``OGB_MAG`` dataset uses. The default ratios are ogbn-mag's (736,389
papers; per paper 1.54 authors, 0.0119 institutions, 0.0814 fields of study, 9.70 ``writes``,
7.36 ``cites`` and 10.19 ``has_topic`` edges; 0.92 affiliations per author; 349 venues).

How it is generated (all with one seeded ``numpy`` generator; memory is a few arrays of the
edge counts plus ``x``, never a dense matrix):

* every paper gets a venue (its label ``y``; Zipf-like venue sizes) and a year in 2010-2019
  (ogbn-mag's time split proportions: 85.5 % before 2018, 8.8 % in 2018, 5.7 % in 2019);
* authors, institutions and fields of study each get a home venue and a Pareto-distributed
  popularity (heavy-tailed degrees);
* each author writes one paper of its home venue, and every paper gets a geometric number of
  further authors; each edge endpoint is drawn by popularity, from the paper's venue with
  probability ``homophily`` and from everywhere otherwise; citations and topics likewise, a
  paper citing only papers of its own year or older; affiliations follow the author's home
  venue; duplicates are drawn again (a few rounds) so that the edge counts match the ratios;
* paper features (``num_features``, default 128 as ogbn-mag's word2vec features) are the
  venue's random centroid plus Gaussian noise (``feature_noise``): informative but far from
  sufficient, so that a model using the graph beats one using features alone.

Measured (2-core machine under load): at ogbn-mag's size (736,389 papers) 60-86 s and 1.3 GB
peak memory, giving 1,134,649 authors, 8,740 institutions, 59,965 fields and 1,043,070 /
7,149,433 / 5,398,727 / 7,498,980 affiliated_with / writes / cites / has_topic edges (ogbn-mag:
1,043,998 / 7,145,660 / 5,416,271 / 7,505,078), 349 venues, split 629,246 / 65,189 / 41,954
(ogbn-mag: 629,571 / 64,879 / 41,939); 100,000 papers in about 6 s. At 10,000 papers (seed 0,
41 venues, 40 epochs of full-batch Adam), an MLP on the paper features reaches 33 % test
accuracy and ``to_hetero`` of a two-layer GraphSAGE (after ``ToUndirected``, learned
32-dimensional embeddings for the featureless types) 69 %.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch_geometric.data import HeteroData

MAG_NODE_TYPES = ("paper", "author", "institution", "field_of_study")
AFFILIATED_WITH = ("author", "affiliated_with", "institution")
WRITES = ("author", "writes", "paper")
CITES = ("paper", "cites", "paper")
HAS_TOPIC = ("paper", "has_topic", "field_of_study")
MAG_EDGE_TYPES = (AFFILIATED_WITH, WRITES, CITES, HAS_TOPIC)
MAG_TARGET = "paper"
"""The labelled node type of :func:`mag_like`."""

# ogbn-mag's counts, the source of the default ratios.
_MAG = {"paper": 736_389, "author": 1_134_649, "institution": 8_740, "field_of_study": 59_965,
        "writes": 7_145_660, "cites": 5_416_271, "has_topic": 7_505_078,
        "affiliated_with": 1_043_998, "classes": 349}
YEARS = tuple(range(2010, 2020))
TRAIN_BEFORE, VAL_YEAR, TEST_YEAR = 2018, 2018, 2019
_CHUNK = 1 << 16  # rows of x generated at a time


def _year_probabilities() -> np.ndarray:
    growth = 1.08 ** np.arange(8)  # 2010-2017: a growing literature, 85.5 % in total
    return np.concatenate([0.855 * growth / growth.sum(), [0.088, 0.057]])


def default_num_classes(num_papers: int) -> int:
    """349 venues at ogbn-mag's size, scaled with the square root of ``num_papers``
    (at least 2)."""
    return int(min(_MAG["classes"],
                   max(2, round(_MAG["classes"] * math.sqrt(num_papers / _MAG["paper"])))))


class _RangeSampler:
    """Draws entities in proportion to ``weight`` among those whose ``key`` lies in a range
    ``[first, last]`` (one sorted, cumulated weight array; a draw is one binary search)."""

    def __init__(self, key: np.ndarray, weight: np.ndarray, num_keys: int) -> None:
        self.members = np.argsort(key, kind="stable")
        prefix = np.concatenate([[0.0], np.cumsum(weight[self.members], dtype=np.float64)])
        self.cum = prefix[1:]
        counts = np.bincount(key, minlength=num_keys)
        self.ends = np.cumsum(counts)
        self.starts = self.ends - counts
        self.weight_before = prefix[self.starts]
        self.weight_through = prefix[self.ends]
        self.num_keys = num_keys

    def sample(self, first: np.ndarray, last: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
        """One entity per element, with key in ``[first[i], last[i]]``; an empty range draws
        from all entities."""
        lo = self.weight_before[first]
        hi = self.weight_through[last]
        empty = hi <= lo
        lo = np.where(empty, 0.0, lo)
        hi = np.where(empty, self.cum[-1], hi)
        low_pos = np.where(empty, 0, self.starts[first])
        high_pos = np.where(empty, len(self.members) - 1, self.ends[last] - 1)
        pos = np.searchsorted(self.cum, lo + rng.random(len(first)) * (hi - lo), side="right")
        return self.members[np.clip(pos, low_pos, high_pos)]

    def sample_venue(self, venue: np.ndarray, local: np.ndarray,
                     rng: np.random.Generator) -> np.ndarray:
        """For a sampler keyed by venue: from ``venue[i]`` where ``local[i]``, else from all."""
        return self.sample(np.where(local, venue, 0),
                           np.where(local, venue, self.num_keys - 1), rng)


def _homes(n: int, class_p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Home venues of ``n`` entities: every venue at least once (while n allows), the rest
    drawn by venue size, in a random order."""
    num_classes = len(class_p)
    first = np.arange(min(n, num_classes))
    rest = rng.choice(num_classes, size=n - len(first), p=class_p)
    return rng.permutation(np.concatenate([first, rest])).astype(np.int64)


def _popularity(n: int, shape: float, rng: np.random.Generator) -> np.ndarray:
    """Pareto(shape) weights >= 1: a few entities collect most edges."""
    return rng.pareto(shape, size=n) + 1.0


def _counts(n: int, mean: float, at_least_one: bool, rng: np.random.Generator) -> np.ndarray:
    """Geometric counts with the given mean (support >= 1 or >= 0)."""
    if mean <= 0:
        return np.zeros(n, dtype=np.int64)
    if at_least_one:
        return rng.geometric(1.0 / max(mean, 1.0), size=n).astype(np.int64)
    return rng.geometric(1.0 / (1.0 + mean), size=n).astype(np.int64) - 1


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a sort and a comparison: faster than ``np.unique`` here)."""
    keys = np.sort(keys)
    if keys.size:
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    return keys


def _fill_edges(target: np.ndarray, num_dst: int, draw, valid=None,
                rounds: int = 8) -> torch.Tensor:
    """Distinct edges ``(src, dst)`` with about ``target[src]`` edges per source.

    ``draw(src)`` proposes one destination per element of ``src``; ``valid(src, dst)`` (if
    given) rejects proposals. A source short of its target after duplicates and rejections
    are removed draws again, for at most ``rounds`` rounds (heavy-tailed popularity makes
    duplicates common); what is still missing then stays missing.

    Returns:
        ``[2, E]`` int64, sorted by (src, dst).
    """
    num_src = len(target)
    target = np.minimum(target, num_dst)
    need = target
    keys = np.zeros(0, dtype=np.int64)
    for _ in range(rounds):
        src = np.repeat(np.arange(num_src, dtype=np.int64), need)
        if src.size == 0:
            break
        dst = draw(src)
        if valid is not None:
            ok = valid(src, dst)
            src, dst = src[ok], dst[ok]
        keys = _sorted_unique(np.concatenate([keys, src * num_dst + dst]))
        need = target - np.bincount(keys // num_dst, minlength=num_src)
        if need.sum() <= 1e-3 * target.sum():
            break
    return torch.from_numpy(np.stack([keys // num_dst, keys % num_dst]))


def _affiliation_counts(n: int, mean: float, rng: np.random.Generator) -> np.ndarray:
    """Mostly one institution per author: 0, 1 or 2 (4 % of authors have two) with the given
    mean, or a geometric count if the mean exceeds what that allows."""
    p2 = min(0.04, mean / 2)
    p1 = mean - 2 * p2
    if p1 + p2 > 1.0:
        return _counts(n, mean, False, rng)
    return rng.choice(3, size=n, p=[1.0 - p1 - p2, p1, p2]).astype(np.int64)


def _check_int(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"mag_like: {name} must be an integer >= {minimum} (got {value!r})")
    return int(value)


def _check_float(name: str, value: float, lo: float, hi: float | None = None) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value >= lo and (hi is None or value <= hi)
    if not ok:
        bound = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ValueError(f"mag_like: {name} must be a number in {bound} (got {value!r})")
    return float(value)


def mag_like(num_papers: int = 10_000, seed: int = 0, *, num_classes: int | None = None,
             num_features: int = 128, homophily: float = 0.5, feature_noise: float = 6.0,
             authors_per_paper: float = _MAG["author"] / _MAG["paper"],
             institutions_per_paper: float = _MAG["institution"] / _MAG["paper"],
             fields_per_paper: float = _MAG["field_of_study"] / _MAG["paper"],
             writes_per_paper: float = _MAG["writes"] / _MAG["paper"],
             cites_per_paper: float = _MAG["cites"] / _MAG["paper"],
             topics_per_paper: float = _MAG["has_topic"] / _MAG["paper"],
             affiliations_per_author: float = _MAG["affiliated_with"] / _MAG["author"],
             add_reverse_edges: bool = False) -> HeteroData:
    """An OGB-MAG-shaped ``HeteroData`` with ``num_papers`` papers, deterministic by ``seed``.

    Node attributes, as in ogbn-mag (only papers have features and labels):

    * ``paper``: ``x`` float32 ``[num_papers, num_features]``, ``y`` int64 (the venue,
      ``num_classes`` classes), ``year`` int64, and ``train_mask`` (year < 2018) /
      ``val_mask`` (2018) / ``test_mask`` (2019), OGB's time split;
    * ``author``, ``institution``, ``field_of_study``: ``num_nodes`` only (counts from the
      ``*_per_paper`` ratios, at least 1 each).

    Edge types (``edge_index`` int64, sorted by (source, destination), no duplicates, no
    self-citations): ``MAG_EDGE_TYPES``. With ``add_reverse_edges``,
    ``torch_geometric.transforms.ToUndirected()`` is applied (``cites`` becomes symmetric and
    ``rev_writes`` / ``rev_affiliated_with`` / ``rev_has_topic`` are added), as PyG's OGB-MAG
    examples do before message passing.

    Args:
        num_papers: number of papers (>= 1).
        seed: seed of everything.
        num_classes: number of venues (default :func:`default_num_classes`).
        num_features: paper feature dimension (default 128).
        homophily: probability that an edge endpoint is drawn from the paper's venue.
        feature_noise: standard deviation of the per-dimension noise around the venue centroid
            (whose entries are standard normal); larger makes the features less telling.
        authors_per_paper, institutions_per_paper, fields_per_paper: node counts per paper.
        writes_per_paper, cites_per_paper, topics_per_paper: edges per paper (duplicates are
            redrawn for a few rounds; 2010 papers have few older papers to cite, so ``cites``
            can fall a little short: 7.26 of 7.36 at 20,000 papers).
        affiliations_per_author: requested affiliations per author.
        add_reverse_edges: apply ``ToUndirected()`` (default ``False``: ogbn-mag's own shape).

    Raises:
        ValueError: naming the argument and the value, for an out-of-range argument.
    """
    num_papers = _check_int("num_papers", num_papers, 1)
    seed = _check_int("seed", seed, 0)
    num_features = _check_int("num_features", num_features, 1)
    num_classes = default_num_classes(num_papers) if num_classes is None \
        else _check_int("num_classes", num_classes, 1)
    homophily = _check_float("homophily", homophily, 0.0, 1.0)
    feature_noise = _check_float("feature_noise", feature_noise, 0.0)
    ratios = {name: _check_float(name, value, 0.0) for name, value in (
        ("authors_per_paper", authors_per_paper),
        ("institutions_per_paper", institutions_per_paper),
        ("fields_per_paper", fields_per_paper), ("writes_per_paper", writes_per_paper),
        ("cites_per_paper", cites_per_paper), ("topics_per_paper", topics_per_paper),
        ("affiliations_per_author", affiliations_per_author))}

    rng = np.random.default_rng(seed)
    n_paper = num_papers
    n_author = max(1, round(ratios["authors_per_paper"] * n_paper))
    n_inst = max(1, round(ratios["institutions_per_paper"] * n_paper))
    n_field = max(1, round(ratios["fields_per_paper"] * n_paper))

    class_p = 1.0 / np.arange(1, num_classes + 1) ** 0.8
    class_p /= class_p.sum()
    y = rng.choice(num_classes, size=n_paper, p=class_p).astype(np.int64)
    year = np.asarray(YEARS, dtype=np.int64)[
        rng.choice(len(YEARS), size=n_paper, p=_year_probabilities())]

    # --- writes: one paper per author (every author writes), then more authors per paper.
    author_home = _homes(n_author, class_p, rng)
    author_sampler = _RangeSampler(author_home, _popularity(n_author, 2.0, rng), num_classes)
    paper_uniform = _RangeSampler(y, np.ones(n_paper), num_classes)
    first_paper = paper_uniform.sample(author_home, author_home, rng)
    extra = max(ratios["writes_per_paper"] - n_author / n_paper, 0.0)
    more = _fill_edges(_counts(n_paper, extra, True, rng), n_author,
                       lambda src: author_sampler.sample_venue(y[src], rng.random(len(src))
                                                               < homophily, rng))
    keys = np.concatenate([np.arange(n_author) * n_paper + first_paper,
                           more[1].numpy() * n_paper + more[0].numpy()])
    keys = _sorted_unique(keys)
    writes = torch.from_numpy(np.stack([keys // n_paper, keys % n_paper]))
    del first_paper, more, keys

    # --- cites: popularity-weighted targets among the papers not newer than the citing one
    # (keys venue-major then year, so "this venue, up to this year" is one range).
    year_idx = year - YEARS[0]
    num_years = len(YEARS)
    popularity = _popularity(n_paper, 1.5, rng)
    cite_local = _RangeSampler(y * num_years + year_idx, popularity, num_classes * num_years)
    cite_any = _RangeSampler(year_idx, popularity, num_years)

    def draw_cited(src: np.ndarray) -> np.ndarray:
        local = rng.random(len(src)) < homophily
        dst = np.empty(len(src), dtype=np.int64)
        s_loc, s_any = src[local], src[~local]
        dst[local] = cite_local.sample(y[s_loc] * num_years,
                                       y[s_loc] * num_years + year_idx[s_loc], rng)
        dst[~local] = cite_any.sample(np.zeros(len(s_any), dtype=np.int64), year_idx[s_any], rng)
        return dst

    cites = _fill_edges(_counts(n_paper, ratios["cites_per_paper"], False, rng), n_paper,
                        draw_cited, lambda src, dst: (src != dst) & (year[dst] <= year[src]))

    # --- has_topic: every paper has at least one field; a few fields are very common.
    field_sampler = _RangeSampler(_homes(n_field, class_p, rng),
                                  _popularity(n_field, 1.2, rng), num_classes)
    topics = _counts(n_paper, ratios["topics_per_paper"], True, rng) \
        if ratios["topics_per_paper"] > 0 else np.zeros(n_paper, dtype=np.int64)
    has_topic = _fill_edges(topics, n_field,
                            lambda src: field_sampler.sample_venue(
                                y[src], rng.random(len(src)) < homophily, rng))

    # --- affiliated_with: about one institution per author, near the author's home venue.
    inst_sampler = _RangeSampler(_homes(n_inst, class_p, rng), _popularity(n_inst, 1.2, rng),
                                 num_classes)
    affiliated = _fill_edges(_affiliation_counts(n_author, ratios["affiliations_per_author"],
                                                 rng), n_inst,
                             lambda src: inst_sampler.sample_venue(
                                 author_home[src], rng.random(len(src)) < homophily, rng))

    # --- paper features: venue centroid + noise, generated in place, a chunk at a time.
    centroids = rng.standard_normal((num_classes, num_features), dtype=np.float32)
    x = np.empty((n_paper, num_features), dtype=np.float32)
    for lo in range(0, n_paper, _CHUNK):
        hi = min(lo + _CHUNK, n_paper)
        block = x[lo:hi]
        rng.standard_normal(out=block, dtype=np.float32)
        block *= np.float32(feature_noise)
        block += centroids[y[lo:hi]]

    data = HeteroData()
    paper = data["paper"]
    paper.x = torch.from_numpy(x)
    paper.y = torch.from_numpy(y)
    paper.year = torch.from_numpy(year)
    paper.train_mask = torch.from_numpy(year < TRAIN_BEFORE)
    paper.val_mask = torch.from_numpy(year == VAL_YEAR)
    paper.test_mask = torch.from_numpy(year == TEST_YEAR)
    data["author"].num_nodes = n_author
    data["institution"].num_nodes = n_inst
    data["field_of_study"].num_nodes = n_field
    data[AFFILIATED_WITH].edge_index = affiliated
    data[WRITES].edge_index = writes
    data[CITES].edge_index = cites
    data[HAS_TOPIC].edge_index = has_topic
    if add_reverse_edges:
        import torch_geometric.transforms as T
        data = T.ToUndirected()(data)
    return data
