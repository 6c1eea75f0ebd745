"""Code-aware signals: what code tells us for free, added to the fused list with the reasons.

The fused list (BM25, or the fusion of BM25 and dense) is re-scored; BM25 and dense stay raw.
Fused scores are divided by the best one, so the top candidate starts at 1 and each signal is
a weight on that scale (a setting each, `signal_*`; 0 turns one off):

* **definitions** — a chunk defining a name the query writes as code rises: a whole-query
  name (`APIRouter`, `parse_config`, `Sinatra::Base`, `res.send`, `name()`) or a name written
  as code inside a question or an issue. Chunks defining it join the candidates even when the
  fused list missed them. A name defined in n files gives each 1/sqrt(n) of the weight, and a
  definition spelled in another case (`engine` for `Engine`) half of that. In issue text a
  name its title line writes counts `signal_title` times (twice by default): the title names
  the subject (`Buf::get_int() returns …`), the body's example code its set-up (`BufMut`,
  `put_int`).
* **identifier forms** — the same for names made of the query's plain words (`parse config`
  -> parseConfig, parse_config, ConfigParser), and at half that for a single word (`session`
  -> Session) or its light stem (`pushed` -> push).
* **path match** — the share of the query's words found in a file's name or its folder's name
  (stems compared: `routes` ~ routing.py).
* **file coherence** — a file whose candidate chunks score highly together: the sum of its
  chunks' fused scores over the largest such sum.
* **role priors** — a file that is a test, example, doc, changelog, benchmark, vendored,
  generated, migration or compat/legacy code (`core.rank.roles`) has its score multiplied by
  the prior once per role the query does not ask for ("test for …", "changelog",
  "example" ask for theirs).
* **same file** — each chunk of a file below that file's best is multiplied by the
  setting once per better chunk (the second once, the third twice), so the top of the list
  covers more files; a file's chunks keep their order, and files keep theirs.
* **issue terms** — a long query (issue text, `core.rank.query_terms`) is also searched with
  its code terms alone (names, paths, frames, exception names), so its prose does not drown
  them; a file it names by path or traceback frame rises (by a dotted module name or a name
  equal to the file's, a quarter as much), and so does a chunk defining a frame's function.
  Frames are read in every language (`core.rank.evidence`): Go panics, Rust backtraces, Java,
  JavaScript, Ruby, PHP and C# frames, compiler errors and links to a file in a forge.
* **quoted messages** — a chunk holding, as a string literal, a message the query quotes
  (`"resolver returned no addresses"`, the text after `error:`), by the share of it found.
* **flags** — a chunk naming a flag or config key the query writes (`--max-depth`, `-j`,
  `maxmemory-policy`) as a string literal (`"max-depth"`, `case 'j'`), less for a name that
  spells it (`max_depth`).
* **module paths** — a file a module path in the query names (`com.acme.core.JsonFactory`,
  `tracing_subscriber::layer`, `github.com/org/repo/core/conf`), half for a file in the folder
  it names (a Go package, a Java package).
* **tests** — the source file beside a test file the query names (`foo.test.ts` -> foo.ts,
  `FooTest.java` -> Foo.java, `foo_test.go` -> foo.go), and the chunk defining what a test's
  name says it tests (`TestUnmarshalJsonReader` -> UnmarshalJsonReader).

Definitions, issue terms, messages, flags and test names go to the chunks they are about; path
match, coherence and a file named in an issue (by path, module path or test) go once to each
file's best chunk, so one file does not fill the list. Every
hit carries `why`: the fused score and each signal's contribution, which sum to its score.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Generic, TypeVar, overload

import numpy as np

from coderag_tui.core.index.chunk_list import ChunkList
from coderag_tui.core.rank.definitions import Defined, Definitions, form
from coderag_tui.core.rank.evidence import (
    Evidence,
    lines_pointed_at,
    package_names,
    package_runs,
    sources_of_tests,
    subject_of,
)
from coderag_tui.core.rank.query_terms import QueryTerms, analyse, identifier_parts, stem
from coderag_tui.core.rank.roles import path_roles
from coderag_tui.core.records import Chunk

if TYPE_CHECKING:
    from coderag_tui.core.rank.lexical import LexicalIndex
    from coderag_tui.settings import Settings

# The labels of a hit's `why` (a definition's label names it: `definition: APIRouter`).
DEFINITION = "definition"
FORM = "identifier form"
PATH = "path"
COHERENCE = "file coherence"
ISSUE = "issue terms"
MESSAGE = "quoted message"
FLAG = "flag"
MODULE = "module path"
TEST = "test"
ROLE = "role"
SAME_FILE = "better chunks of its file above"

# The settings of the signals and the names notes give them (see `signals_on`).
SIGNAL_NAMES: dict[str, str] = {
    "signal_definitions": "definitions",
    "signal_forms": "identifier forms",
    "signal_path": "path match",
    "signal_coherence": "file coherence",
    "signal_roles": "role priors",
    "signal_same_file": "same-file chunks lowered",
    "signal_issue_terms": "issue terms",
    "signal_messages": "quoted messages",
    "signal_flags": "flags",
    "signal_packages": "module paths",
    "signal_tests": "tests",
    "signal_title": "title names",
}

MAX_DEFINED = 40  # chunks defining one query name that are credited (and may join)
OTHER_CASE = 0.5  # a definition spelled otherwise than the query (`engine` for `Engine`)
# How surely an issue names a file, in units of the issue-terms weight: by its path (or a
# traceback frame), by a dotted module name, or by a name written as code equal to its name.
NAMED_BY = {"path": 2.0, "module": 0.5, "name": 0.5}
FRAME = 1.0  # a chunk defining a traceback frame's function in the frame's file, likewise
LITERAL_DEPTH = 50  # chunks the BM25 pass over a quoted message's words looks at
FLAG_DEPTH = 400  # and over a flag's: a flag's word is rare, so nearly all chunks holding it
FOLDER = 0.5  # a file in the folder a module path names, in units of the module-path weight


@dataclass(frozen=True, kw_only=True)
class Weights:
    """Each signal's weight on the scale where the best fused candidate scores 1 (0: off);
    `roles` multiplies the score of a file in a role the query does not ask for, and
    `same_file` that of each chunk below its file's best, once per better chunk (1: off).
    The defaults are the settings' (`signal_*`), never repeated here."""

    definitions: float
    forms: float
    path: float
    coherence: float
    roles: float
    same_file: float
    issue_terms: float
    messages: float = 0.0
    flags: float = 0.0
    packages: float = 0.0
    tests: float = 0.0
    title: float = 1.0  # times a name in an issue's title counts for `definitions`

    @classmethod
    def from_settings(cls, settings: Settings) -> Weights:
        if not settings.signals:
            return cls.off()
        return cls(
            definitions=settings.signal_definitions,
            forms=settings.signal_forms,
            path=settings.signal_path,
            coherence=settings.signal_coherence,
            roles=settings.signal_roles,
            same_file=settings.signal_same_file,
            issue_terms=settings.signal_issue_terms,
            messages=settings.signal_messages,
            flags=settings.signal_flags,
            packages=settings.signal_packages,
            tests=settings.signal_tests,
            title=settings.signal_title,
        )

    @classmethod
    def off(cls) -> Weights:
        return cls(
            definitions=0.0,
            forms=0.0,
            path=0.0,
            coherence=0.0,
            roles=1.0,
            same_file=1.0,
            issue_terms=0.0,
        )


def signals_on(settings: Settings) -> list[str]:
    """The names of the signals a search with these settings uses (empty: none)."""
    if not settings.signals:
        return []
    off = Weights.off()
    return [
        label
        for name, label in SIGNAL_NAMES.items()
        if getattr(settings, name) != getattr(off, name.removeprefix("signal_"))
    ]


class FileRuns(Sequence[range]):
    """Each file's chunk indexes, from the files' first chunks (`starts`, one more than
    files): made when asked for, so a new chunk list costs no range per file."""

    def __init__(self, starts: list[int]) -> None:
        self._starts = starts

    def __len__(self) -> int:
        return len(self._starts) - 1

    @overload
    def __getitem__(self, fid: int) -> range: ...

    @overload
    def __getitem__(self, fid: slice) -> list[range]: ...

    def __getitem__(self, fid: int | slice) -> range | list[range]:
        if isinstance(fid, slice):
            return [self[i] for i in range(*fid.indices(len(self)))]
        if fid < 0:
            fid += len(self)
        if not 0 <= fid < len(self):
            raise IndexError(f"file {fid} of {len(self)}")
        return range(self._starts[fid], self._starts[fid + 1])


@dataclass
class CodeFacts:
    """What the signals know about a list of chunks, computed once for it: each chunk's
    file, each file's chunks, name words and roles, and the definitions."""

    chunks: Sequence[Chunk]
    definitions: Definitions | None
    file_of: list[int] = field(default_factory=list)
    chunks_of: Sequence[Sequence[int]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    languages: list[str | None] = field(default_factory=list)
    # Per file id, computed the first time a candidate of that file is scored: a query looks
    # at a few hundred files, and doing every file up front cost 0.6 s at 50k files.
    path_words: PerFile[frozenset[str]] = field(init=False, repr=False)
    roles: PerFile[frozenset[str]] = field(init=False, repr=False)
    _files_defining: dict[str, int] = field(default_factory=dict, repr=False)
    _known: frozenset[str] | None = field(default=None, repr=False)
    _file_of_array: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        chunks = self.chunks
        if isinstance(chunks, ChunkList):  # files and spans in memory, texts never read
            self.paths = chunks.paths
            self.languages = chunks.languages
            self.file_of = chunks.file_of.tolist()
            self.chunks_of = FileRuns(chunks.file_starts.tolist())
        else:
            ids: dict[str, int] = {}
            groups: list[list[int]] = []
            for i, chunk in enumerate(chunks):
                fid = ids.get(chunk.path)
                if fid is None:
                    fid = ids[chunk.path] = len(self.paths)
                    self.paths.append(chunk.path)
                    self.languages.append(chunk.language)
                    groups.append([])
                self.file_of.append(fid)
                groups[fid].append(i)
            self.chunks_of = list(groups)
        self.path_words = PerFile(lambda fid: _path_words(self.paths[fid]))
        self.roles = PerFile(lambda fid: path_roles(self.paths[fid], self.languages[fid]))

    @property
    def file_of_array(self) -> np.ndarray:
        """`file_of` as an array (the learned reranker maps many chunks to files at once)."""
        if self._file_of_array is None:
            chunks = self.chunks
            self._file_of_array = (
                chunks.file_of
                if isinstance(chunks, ChunkList)
                else np.asarray(self.file_of, dtype=np.int64)
            )
        return self._file_of_array

    def defining(self, key: str) -> tuple[Defined, ...]:
        """The definitions of names of this form (see `definitions.form`)."""
        return self.definitions.lookup(key) if self.definitions is not None else ()

    def files_defining(self, key: str) -> int:
        """How many files define a name of this form."""
        count = self._files_defining.get(key)
        if count is None:
            files = {self.file_of[d.chunk] for d in self.defining(key)}
            count = self._files_defining[key] = len(files)
        return count

    def knows(self, name: str) -> bool:
        """Whether the repository has a file, folder or definition of this name."""
        if self._known is None:
            known: set[str] = set()
            for path in self.paths:
                pure = PurePosixPath(path)
                known.update(form(part) for part in pure.parts[:-1])
                known.add(form(pure.name.split(".", 1)[0]))
            self._known = frozenset(known)
        key = form(name)
        return key in self._known or (self.definitions is not None and key in self.definitions)


V = TypeVar("V")


class PerFile(Generic[V]):
    """A fact about each file (by file id), computed the first time it is asked for."""

    def __init__(self, compute: Callable[[int], V]) -> None:
        self._compute = compute
        self._known: dict[int, V] = {}

    def __getitem__(self, fid: int) -> V:
        if fid not in self._known:
            self._known[fid] = self._compute(fid)
        return self._known[fid]


def _path_words(path: str) -> frozenset[str]:
    """Stems of the words of a file's name and of its folder's name."""
    pure = PurePosixPath(path)
    words = identifier_parts(pure.name.split(".", 1)[0])
    if len(pure.parts) > 1:
        words += identifier_parts(pure.parts[-2])
    return frozenset(stem(w) for w in words if len(w) >= 2)


# --- re-scoring -------------------------------------------------------------------------------

Why = tuple[tuple[str, float], ...]
Scored = tuple[int, float, Why]
_Add = Callable[[int, str, float], None]
_Boosts = dict[int, dict[str, float]]  # file -> label -> value, for the file's best chunk


def rescore(  # noqa: PLR0913
    query: str,
    fused: Sequence[tuple[int, float]],
    facts: CodeFacts,
    weights: Weights,
    *,
    base: str = "bm25",
    bm25: LexicalIndex | None = None,
    depth: int = 100,
    exclude: Iterable[int] = (),
    terms: QueryTerms | None = None,
) -> list[Scored]:
    """The fused candidates (index, score; best first) re-scored by the signals, best first,
    each with its `why` (`base` names the fused score in it). `bm25` serves the issue-terms
    pass, which looks `depth` chunks deep; chunks in `exclude` never appear. `terms`: the
    query already read (`analyse(query)`, which costs milliseconds for issue text)."""
    terms = terms if terms is not None else analyse(query)
    excluded = frozenset(exclude)
    top = max((s for _, s in fused), default=0.0)
    scale = top if top > 0 else 1.0
    parts: dict[int, dict[str, float]] = {i: {base: s / scale} for i, s in fused}

    def add(i: int, label: str, value: float) -> None:
        if i not in excluded and value != 0.0:
            entry = parts.setdefault(i, {base: 0.0})
            entry[label] = entry.get(label, 0.0) + value

    boosts: _Boosts = defaultdict(dict)
    if terms.long and weights.issue_terms > 0:
        _issue_terms(terms, facts, weights.issue_terms, bm25, depth, add, parts, boosts, base)
    _evidence(terms, facts, weights, bm25, add, parts, boosts, base)
    if weights.definitions > 0 or weights.forms > 0:
        _definitions(terms, facts, weights, add)
    if weights.path > 0:
        _path_match(terms, facts, weights.path, parts, boosts)
    if weights.coherence > 0:
        _coherence(parts, facts, weights.coherence, base, boosts)
    _to_best_chunks(parts, facts, boosts, excluded)
    if weights.roles != 1.0:
        for i, entry in parts.items():
            roles = facts.roles[facts.file_of[i]] - terms.roles_asked
            if roles:
                prior = weights.roles ** len(roles)  # once per role: an issue template is
                label = f"{ROLE}: {'+'.join(sorted(roles))}"  # docs and housekeeping both
                entry[label] = sum(entry.values()) * (prior - 1.0)
    if weights.same_file != 1.0:
        _same_file(parts, facts, weights.same_file, excluded)
    out = [(i, sum(e.values()), tuple(e.items())) for i, e in parts.items() if i not in excluded]
    out.sort(key=lambda item: (-item[1], item[0]))
    return out


def _evidence(  # noqa: PLR0913
    terms: QueryTerms, facts: CodeFacts, weights: Weights, bm25: LexicalIndex | None, add: _Add,
    parts: dict[int, dict[str, float]], boosts: _Boosts, base: str,
) -> None:  # fmt: skip
    """The signals of what the query points at (`core.rank.evidence`)."""
    if terms.evidence:
        _literals(terms.evidence, facts, weights, bm25, add)
        _evidence_files(terms, facts, weights, add, parts, boosts, base)


def _definitions(terms: QueryTerms, facts: CodeFacts, weights: Weights, add: _Add) -> None:
    """Chunks defining a name the query writes as code, or a form of its plain words."""
    credited: dict[int, float] = {}

    def credit(key: str, weight: float, label: str, spelled: str = "") -> None:
        found = facts.defining(key)
        if not found or weight <= 0:
            return
        full = weight / math.sqrt(facts.files_defining(key))
        for d in found[:MAX_DEFINED]:
            value = full if not spelled or d.name == spelled else full * OTHER_CASE
            have = credited.get(d.chunk, 0.0)
            if value > have:  # a chunk counts its best name, once
                add(d.chunk, label, value - have)
                credited[d.chunk] = value

    names = list(terms.names)
    for dotted in terms.dotted:  # issue text: the parts after one the repository knows
        known = next((n for n, part in enumerate(dotted) if facts.knows(part)), len(dotted))
        names += [part for part in dotted[known + 1 :] if part not in names]
    for rank, name in enumerate(names):
        weight = weights.definitions
        if terms.name_query and rank > 0:
            weight *= 0.5  # `Sinatra::Base`: Base in full, Sinatra at half
        titled = name in terms.titled and weights.title > 1
        if titled:
            weight *= weights.title  # the title names the subject, the body its set-up
        where = " in the title" if titled else ""
        credit(form(name), weight, f"{DEFINITION}{where}: {name}", name)
    if not terms.name_query and weights.forms > 0:
        for key in terms.forms:
            credit(key, weights.forms, f"{FORM}: {key}")
        for word in _single_words(terms.words):
            credit(word, weights.forms * 0.5, f"{FORM}: {word}")


def _single_words(words: Sequence[str]) -> list[str]:
    """The plain words a definition may be named by alone: each of 4+ letters, and its light
    stem when that differs (`pushed` asks where `push` is defined, `routes` where `route`)."""
    out: list[str] = []
    for word in words:
        if len(word) >= 4 and word.isalpha():
            out.append(word)
            root = stem(word)
            if root != word and len(root) >= 4:
                out.append(root)
    return out


def _path_match(
    terms: QueryTerms, facts: CodeFacts, weight: float, parts: dict[int, dict[str, float]],
    boosts: _Boosts,
) -> None:  # fmt: skip
    """The share of the query's words (plain words of 3+ letters and the parts of its names)
    found in a candidate file's name or folder name."""
    words = [w for w in terms.words if len(w) >= 3 and not w.isdigit()]
    for name in terms.names:
        words += [p for p in identifier_parts(name) if len(p) >= 3]
    stems = sorted({stem(w) for w in words})
    if not stems:
        return
    for fid in {facts.file_of[i] for i in parts}:
        found: set[str] = set()
        for part in facts.path_words[fid]:
            found.update(_same_words(part, stems))
        if found:
            boosts[fid][PATH] = weight * len(found) / len(stems)


def _same_words(word: str, stems: list[str]) -> list[str]:
    """The sorted `stems` that are one word with `word` (see `same_word`): equal to it, a
    prefix of it, or starting with it, 4+ letters shared."""
    found = [word[:n] for n in range(4, len(word)) if word[:n] in stems]
    if word in stems:
        found.append(word)
    if len(word) >= 4:  # the stems that start with it sit together in sorted order
        at = bisect.bisect_left(stems, word)
        while at < len(stems) and stems[at].startswith(word):
            found.append(stems[at])
            at += 1
    return found


def _issue_terms(  # noqa: PLR0913
    terms: QueryTerms, facts: CodeFacts, weight: float, bm25: LexicalIndex | None, depth: int,
    add: _Add, parts: dict[int, dict[str, float]], boosts: _Boosts, base: str,
) -> None:  # fmt: skip
    """Issue text: BM25 over its code terms alone, the chunks defining a traceback frame's
    function in the frame's file, and the files the issue names."""
    if bm25 is not None and terms.code_text:
        scored = bm25.search_tokens(bm25.tokenize_query(terms.code_text), depth)
        best = max((s for _, s in scored), default=0.0)
        if best > 0:
            for i, s in scored:
                add(i, ISSUE, weight * s / best)
    for path, function in terms.frames:
        suffix = _path_suffix(path)
        if function and suffix:
            for d in facts.defining(form(function)):
                if ("/" + facts.paths[facts.file_of[d.chunk]]).endswith("/" + suffix):
                    add(d.chunk, f"{ISSUE}: traceback frame {function}", weight * FRAME)
    present = {facts.file_of[i] for i in parts}
    for fid, how in _named_files(terms, facts).items():
        if fid not in present:  # not among the candidates: its first chunk stands for it
            parts.setdefault(facts.chunks_of[fid][0], {base: 0.0})
        boosts[fid][f"{PATH}: {how} in the issue"] = weight * NAMED_BY[how]


def _literals(
    evidence: Evidence, facts: CodeFacts, weights: Weights, bm25: LexicalIndex | None,
    add: _Add,
) -> None:  # fmt: skip
    """Chunks holding a quoted message, or a flag or key the query names, as a string literal:
    BM25 over their words finds where to look (every chunk with a flag's word, up to
    `FLAG_DEPTH`), `evidence.lines_pointed_at` reads the lines, and a chunk gains the weight
    times its best line's (capped at 1)."""
    if bm25 is None:
        return
    kinds: list[tuple[str, Evidence, float, str, int, tuple[str, ...]]] = []
    if weights.messages > 0 and evidence.messages:
        only = Evidence(messages=evidence.messages)
        text = " ".join(evidence.messages)
        kinds.append((MESSAGE, only, weights.messages, text, LITERAL_DEPTH, ()))
    if weights.flags > 0 and (evidence.flags or evidence.config_keys):
        only = Evidence(flags=evidence.flags, config_keys=evidence.config_keys)
        bare = [f.lstrip("-").split("=", 1)[0] for f in (*evidence.flags, *evidence.config_keys)]
        needles = tuple(  # as written, as snake_case and as camelCase (lowered)
            {b.lower().replace("-", sep) for b in bare if len(b) > 1 for sep in ("-", "_", "")}
        ) + tuple(f"{q}{b}" for b in bare if len(b) == 1 for q in ("-", "'"))
        kinds.append((FLAG, only, weights.flags, " ".join(bare), FLAG_DEPTH, needles))
    for label, only, weight, text, depth, needles in kinds:
        tokens = bm25.tokenize_query(text)
        for i, _ in bm25.search_tokens(tokens, depth) if tokens else ():
            chunk = facts.chunks[i]
            if needles and not any(n in chunk.text.lower() for n in needles):
                continue  # cheaper than reading its lines: no flag is written there
            found = lines_pointed_at(only, chunk.path, chunk.text.split("\n"), chunk.language)
            best = max((p.weight for p in found), default=0.0)
            if best > 0:
                add(i, f"{label}: {found[0].why[0]}", weight * min(best, 1.0))


def _evidence_files(
    terms: QueryTerms, facts: CodeFacts, weights: Weights, add: _Add,
    parts: dict[int, dict[str, float]], boosts: _Boosts, base: str,
) -> None:  # fmt: skip
    """The files a module path names (or lies in the folder of; one issue terms named by its
    dotted name counts once), the source beside a test file the query names, and the
    definitions a test's name points at."""
    evidence = terms.evidence
    named: dict[int, tuple[str, float]] = {}
    if weights.packages > 0 and evidence.packages:
        runs = package_runs(evidence.packages)
        dotted = _dotted_modules(terms) if terms.long else set()
        for fid, path in enumerate(facts.paths):
            how = package_names(path, runs)
            if how == "module" and dotted and _module_of(path, dotted):
                continue  # issue terms named it already, by its dotted name
            if how is not None:
                value = weights.packages * (1.0 if how == "module" else FOLDER)
                named[fid] = (f"{MODULE}: {how} in the issue", value)
    if weights.tests > 0 and evidence.tests:
        for fid in sources_of_tests(evidence.tests, facts.paths):
            named[fid] = (f"{TEST}: the source beside a test in the issue", weights.tests)
        for name in dict.fromkeys(map(subject_of, evidence.tests)):
            if name and "." not in name:
                key = form(name)
                found = facts.defining(key)
                share = weights.tests / math.sqrt(max(1, facts.files_defining(key)))
                for d in found[:MAX_DEFINED]:
                    add(d.chunk, f"{TEST}: defines {name}", share)
    present = {facts.file_of[i] for i in parts}
    for fid, (label, value) in named.items():
        if fid not in present:  # not among the candidates: its first chunk stands for it
            parts.setdefault(facts.chunks_of[fid][0], {base: 0.0})
        boosts[fid][label] = boosts[fid].get(label, 0.0) + value


def _named_files(terms: QueryTerms, facts: CodeFacts) -> dict[int, str]:
    """The files an issue names, and how (see `NAMED_BY`): `path` (a path or stack frame; a
    bare file name that several files share, like `__init__.py`, names none), `module`
    (`pvlib.irradiance.reindl` -> pvlib/irradiance.py) or `name` (`PVSystem` -> pvsystem.py;
    a quoted word too: `locale('sv')` -> sv.js)."""
    suffixes = {s for s in map(_path_suffix, terms.paths) if s}
    modules = _dotted_modules(terms)
    names = {form(name) for name in (*terms.names, *terms.evidence.strings)}
    by_suffix: dict[str, list[int]] = defaultdict(list)
    named: dict[int, str] = {}
    for fid, path in enumerate(facts.paths):
        slashed = "/" + path
        suffix = next((s for s in suffixes if slashed.endswith("/" + s)), None)
        if suffix is not None:
            by_suffix[suffix].append(fid)
        elif _module_of(path, modules):
            named[fid] = "module"
        elif form(PurePosixPath(path).name.split(".", 1)[0]) in names:
            named[fid] = "name"
    for suffix, fids in by_suffix.items():
        if "/" in suffix or len(fids) == 1:
            named.update(dict.fromkeys(fids, "path"))
    return named


def _dotted_modules(terms: QueryTerms) -> set[str]:
    """The module paths the issue's dotted names spell (`pvlib.irradiance.reindl` ->
    pvlib, pvlib/irradiance, pvlib/irradiance/reindl), lower case."""
    return {"/".join(d[:n]).lower() for d in terms.dotted for n in range(1, len(d) + 1)}


def _module_of(path: str, modules: set[str]) -> bool:
    """Whether the file is one of `modules` (`_dotted_modules`): pvlib/irradiance.py."""
    stem = ("/" + path).rsplit(".", 1)[0].lower()
    return any(stem.endswith("/" + m) for m in modules)


def _path_suffix(path: str) -> str:
    """A file and its folder (`site-packages/pkg/mod.py` -> pkg/mod.py); a bare file name
    stays as it is; '' for a path without a file extension."""
    parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
    if not parts or "." not in parts[-1].strip("."):
        return ""
    return "/".join(parts[-2:])


def _coherence(
    parts: dict[int, dict[str, float]], facts: CodeFacts, weight: float, base: str,
    boosts: _Boosts,
) -> None:  # fmt: skip
    """Each file's candidates' fused scores summed, over the largest such sum."""
    sums: dict[int, float] = defaultdict(float)
    for i, entry in parts.items():
        sums[facts.file_of[i]] += entry.get(base, 0.0)
    top = max(sums.values(), default=0.0)
    if top > 0:
        for fid, total in sums.items():
            if total > 0:
                boosts[fid][COHERENCE] = weight * total / top


def _same_file(
    parts: dict[int, dict[str, float]], facts: CodeFacts, factor: float,
    excluded: frozenset[int],
) -> None:  # fmt: skip
    """Multiply each chunk's score by `factor` once per better chunk of its file (ties: the
    earlier chunk is the better), so a file's chunks keep their order below its best."""
    totals = {i: sum(entry.values()) for i, entry in parts.items() if i not in excluded}
    above: dict[int, int] = {}
    for i in sorted(totals, key=lambda i: (-totals[i], i)):
        fid = facts.file_of[i]
        n = above.get(fid, 0)
        above[fid] = n + 1
        if n and totals[i] > 0:
            parts[i][SAME_FILE] = totals[i] * (factor**n - 1.0)


def _to_best_chunks(
    parts: dict[int, dict[str, float]], facts: CodeFacts, boosts: _Boosts,
    excluded: frozenset[int],
) -> None:  # fmt: skip
    """Add each file's boosts to its best candidate chunk (on a tie, the earlier one)."""
    best: dict[int, tuple[float, int]] = {}
    for i, entry in parts.items():
        if i not in excluded:
            fid, total = facts.file_of[i], sum(entry.values())
            if fid not in best or (-total, i) < (-best[fid][0], best[fid][1]):
                best[fid] = (total, i)
    for fid, values in boosts.items():
        if fid in best:
            entry = parts[best[fid][1]]
            for label, value in values.items():
                entry[label] = entry.get(label, 0.0) + value
