"""Issue text in every language: the file its evidence points at comes first.

For each language a tiny repository holds the file to fix and a file the issue's prose
describes better. The issue, with its stack frame, compiler error, quoted message, flag, module
path or test name, ranks the file to fix first in the fused list (dense off: BM25 and the code
signals); the same prose without that evidence does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from coderag_tui.core.engine import Engine
from coderag_tui.settings import Settings


@dataclass(frozen=True)
class Case:
    files: dict[str, str]
    target: str
    prose: str  # the issue without its evidence (more than 30 words: issue text)
    evidence: str  # what the issue adds


CACHE_GO = """package cache

// Cache keeps entries in memory until they expire; a cleaner goroutine removes expired
// entries, and every entry expires after its time to live. The cache counts the entries it
// holds, the entries that expired and the entries it cleaned.
type Cache struct {
	entries map[string]entry // entries by key; each entry expires after the cache's ttl
}

// clean removes the entries that expired from the cache.
func (c *Cache) clean() {
	for key, e := range c.entries { // an expired entry leaves the cache
		if e.expired() {
			delete(c.entries, key)
		}
	}
}
"""
UNMARSHALER_GO = """package mapping

type Unmarshaler struct{ key string }

func (u *Unmarshaler) fillField(field reflect.StructField, value reflect.Value) error {
	kind := field.Type.Kind()
	if kind == reflect.Ptr {
		return u.fillPointer(field, value)
	}
	return u.fillPrimitive(field, value)
}
"""
CACHE_PROSE = (
    "Entries leave the cache before they expire. I keep entries in the cache with a time to "
    "live of a minute, and after a few seconds the cache no longer holds them: the cleaner "
    "seems to treat fresh entries as expired entries, so the cache is cleaned too early and "
    "my entries expire at once. Expected the cache to keep entries until they expire.\n"
)

WALK_RS = """//! Walking the directory tree: hidden files, ignored files and the search paths.

/// Walk every search path and send each entry that passes the filters; hidden files and
/// ignored files are skipped unless asked for, and each path is printed relative to the
/// search path it was found under.
pub fn scan(paths: &[PathBuf], config: &Config) -> Result<ExitCode> {
    let walker = build_walker(paths, config);
    for entry in walker {
        // each found path is printed relative to the search path
        print_path(&entry, config);
    }
    Ok(ExitCode::Success)
}
"""
CLI_RS = """use clap::Parser;

#[derive(Parser)]
pub struct Opts {
    /// Leave out the leading ./ of each found path that is printed
    #[arg(long = "strip-cwd-prefix")]
    pub strip_cwd_prefix: bool,
    #[arg(short = 'j', long)]
    pub threads: Option<usize>,
}
"""
WALK_PROSE = (
    "Printed paths keep the leading dot and slash. When I search the current directory, "
    "every found path is printed relative to the search path with ./ in front, hidden files "
    "and ignored files included, and my scripts that walk the directory tree and read each "
    "printed path have to strip it themselves. Expected the found paths without it.\n"
)

JSON_READER = """package com.acme.json;

public final class Reader {
    private final char[] buffer;

    double parseNumber(int start, int end) {
        int sign = buffer[start] == '-' ? -1 : 1;
        return sign * Double.parseDouble(new String(buffer, start, end - start));
    }
}
"""
XML_READER = """package com.acme.xml;

/** Reads documents: numbers, attributes and text; a number is read as a double. */
public final class Reader {
    /** Reads a number attribute as a double; a negative number keeps its sign. */
    double readNumberAttribute(String name) {
        return Double.parseDouble(attribute(name)); // the number as a double
    }
}
"""
NUMBER_PROSE = (
    "Negative numbers lose their sign when a document is read. A document with the number "
    "-12.5 gives 12.5 as a double: the reader reads each number as a double and the sign of "
    "a negative number is dropped, for attributes and text alike. Expected a negative "
    "number to stay negative when the reader reads it as a double.\n"
)

WEEK_OF_YEAR_JS = """// The week of the year plugin: which week of the year a date falls in.
export default (o, c) => {
  const proto = c.prototype
  // the week of the year, counted from the locale's first day of the week
  proto.week = function (week) {
    const weekStart = this.$locale().weekStart || 0 // the locale's first day of the week
    return this.startOf('year').add(week, 'week')
  }
}
"""
WEEK_YEAR_JS = """export default (o, c) => {
  const proto = c.prototype
  proto.weekYear = function () {
    const month = this.month()
    const weekOfYear = this.week()
    const year = this.year()
    if (weekOfYear === 1 && month === 11) return year + 1
    if (month === 0 && weekOfYear >= 52) return year - 1
    return year
  }
}
"""
WEEK_PROSE = (
    "The week of the year is wrong for locales whose week starts on a Monday. For the last "
    "days of December the week of the year plugin gives the first week of the next year, so "
    "the year of that week is wrong for such a locale: expected the week of the year to "
    "follow the locale's first day of the week.\n"
)

DYNAMIC_THEME_TS = """// The dynamic theme: fixes for each site, matched by URL, applied to styles.
export function getDynamicThemeFixesFor(url: string, fixes: DynamicThemeFix[]) {
    // the fixes of the first site whose URL matches the page's URL
    const found = fixes.find((fix) => fix.url.some((pattern) => isURLMatched(url, pattern)));
    return found ?? fixes[0]; // the site's fixes, or the common fixes of every site
}
"""
PARSE_TS = """export function parseArray(text: string): string[] {
    return text
        .replace(/\\r/g, '')
        .split(/^\\s*={2,}\\s*$/gm)
        .map((section) => section.trim())
        .filter((section) => section.length > 0);
}
"""
THEME_PROSE = (
    "The dynamic theme fixes of a site are not applied. I added fixes for my site to the "
    "dynamic theme fixes, matched by the site's URL, and the page still gets the common "
    "fixes of every site instead of the site's fixes: the URL of the page seems never to "
    "match the site's URL pattern, so no site fixes reach the page's styles.\n"
)

CLI_C = """/* The command line: passthrough, output to the console and forced overwrites. */
int main(int argc, const char** argv) {
    /* passthrough: with force and output to the console, copy input that is not compressed */
    if (forceStdout && outFileName == NULL) passThrough = 1; /* console output, forced */
    if (outFileName != NULL) passThrough = 0; /* an output file given: no passthrough */
    return operation(passThrough, outFileName);
}
"""
FILEIO_C = """/* decompress each frame to the output file; input not compressed is an error */
static int FIO_decompressFrames(FIO_ctx_t* const fCtx, dRess_t ress, const char* src)
{
    if (readSomeFrames == 0) {
        DISPLAYLEVEL(1, "zstd: %s: unsupported format \\n", src);
        return 1;
    }
    return 0;
}
"""
PASSTHROUGH_PROSE = (
    "Passthrough does not work when an output file is given. Decompressing with force to the "
    "console copies input that is not compressed, as gzip does, but with an output file "
    "given the passthrough is disabled and nothing is written to the output file, while the "
    "console output with force still works. Expected passthrough with an output file too.\n"
)

POINTER_HPP = """// JSON Pointer on the DOM: each element of a document is found by its pointer.
// A JSON pointer names an element by the keys and indexes on the path from the root.
inline simdjson_result<element> element::at_pointer(std::string_view json_pointer) const {
  // follow the pointer from this element, key by key and index by index
  return at_pointer_from(json_pointer, *this); // the element the pointer names
}
"""
TAPE_CPP = """// each key of a JSON pointer, from the root element of the document
error_code tape_builder::visit_key(json_iterator &iter, const uint8_t *key) {
  if (*key != '"') {
    throw simdjson_error("Invalid JSON pointer syntax");
  }
  return visit_string(iter, key, true);
}
"""
POINTER_PROSE = (
    "Looking up an element by its JSON pointer fails. On a document parsed into the DOM, "
    "asking an element for the element at a JSON pointer with keys and indexes from the root "
    "fails for every pointer I try, even for a key at the root. Expected the element the "
    "pointer names, as the documentation of JSON pointers on the DOM says.\n"
)

ROTATING_PHP = """<?php
namespace Monolog\\Handler;

/** Writes records to files rotated by date: one log file per day, old files deleted. */
class RotatingFileHandler extends Handler
{
    /** Rotates the log file when the date changes and writes the record to today's file. */
    protected function write(array $record): void
    {
        $this->rotate(); // a new log file each day
    }
}
"""
STREAM_PHP = """<?php
namespace Monolog\\Handler;

class StreamHandler extends Handler
{
    protected function write(array $record): void
    {
        fwrite($this->stream, (string) $record['formatted']);
    }
}
"""
LOG_PROSE = (
    "Records are written to the log file twice after the date changes. With a handler that "
    "writes records to log files, each record written after midnight appears twice in the "
    "log file of the day, and the log file of the previous day is not rotated or deleted. "
    "Expected each record to be written once to the log file of its day.\n"
)

ROUTES_RB = """# Routes: each route matches a path pattern and runs its block; routes are matched in
# the order they were defined, and the first route whose pattern matches the path wins.
module Sinatra
  class Routes
    # match the path against each route's pattern, in order
    def match(path)
      @routes.find { |route| route.pattern.match(path) } # the first matching route
    end
  end
end
"""
BASE_RB = """module Sinatra
  class Base
    def route!(base = settings, pass_block = nil)
      if base.filters[:before].any?
        filter! :before, base
      end
      invoke { dispatch! }
    end
  end
end
"""
ROUTE_PROSE = (
    "A route defined after another route with the same path pattern never runs. Routes are "
    "matched in the order they were defined, but when the first matching route passes, the "
    "next route whose pattern matches the path is not tried and the request gets a 404. "
    "Expected the next matching route to run when a route passes.\n"
)

CASES: dict[str, Case] = {
    "go: a panic's frame": Case(
        {"core/cache/cache.go": CACHE_GO, "core/mapping/unmarshaler.go": UNMARSHALER_GO},
        "core/mapping/unmarshaler.go",
        CACHE_PROSE,
        "```\npanic: runtime error: invalid memory address or nil pointer dereference\n\n"
        "goroutine 1 [running]:\n"
        "github.com/acme/shop/core/mapping.(*Unmarshaler).fillField(0xc000010000, 0x0)\n"
        "\t/home/me/go/pkg/mod/github.com/acme/shop@v1.4.0/core/mapping/unmarshaler.go:7 "
        "+0x1d\n```\n",
    ),
    "rust: a flag": Case(
        {"src/walk.rs": WALK_RS, "src/cli.rs": CLI_RS},
        "src/cli.rs",
        WALK_PROSE,
        "This is with `--strip-cwd-prefix`, which should leave it out.\n",
    ),
    "java: a frame's package tells two files apart": Case(
        {
            "src/main/java/com/acme/xml/Reader.java": XML_READER,
            "src/main/java/com/acme/json/Reader.java": JSON_READER,
        },
        "src/main/java/com/acme/json/Reader.java",
        NUMBER_PROSE,
        "```\njava.lang.NumberFormatException: bad sign\n"
        "\tat com.acme.json.Reader.parseNumber(Reader.java:7)\n```\n",
    ),
    "javascript: a test's file names its source": Case(
        {
            "src/plugin/weekOfYear/index.js": WEEK_OF_YEAR_JS,
            "src/plugin/weekYear/index.js": WEEK_YEAR_JS,
        },
        "src/plugin/weekYear/index.js",
        WEEK_PROSE,
        "The failing test is test/plugin/weekYear/index.test.js.\n",
    ),
    "typescript: a compiler error": Case(
        {"src/generators/dynamic-theme.ts": DYNAMIC_THEME_TS, "src/generators/parse.ts": PARSE_TS},
        "src/generators/parse.ts",
        THEME_PROSE,
        "```\nsrc/generators/parse.ts(4,19): error TS2345: Argument of type 'RegExp' is not "
        "assignable.\n```\n",
    ),
    "c: a quoted message": Case(
        {"programs/zstdcli.c": CLI_C, "programs/fileio.c": FILEIO_C},
        "programs/fileio.c",
        PASSTHROUGH_PROSE,
        'zstd prints "hello: unsupported format" for the file.\n',
    ),
    "c++: a quoted exception message": Case(
        {"include/simdjson/dom/element-inl.h": POINTER_HPP, "src/tape_builder.cpp": TAPE_CPP},
        "src/tape_builder.cpp",
        POINTER_PROSE,
        'It throws "invalid JSON pointer syntax" each time.\n',
    ),
    "php: a namespace": Case(
        {
            "src/Monolog/Handler/RotatingFileHandler.php": ROTATING_PHP,
            "src/Monolog/Handler/StreamHandler.php": STREAM_PHP,
        },
        "src/Monolog/Handler/StreamHandler.php",
        LOG_PROSE,
        "The handler is Monolog\\Handler\\StreamHandler.\n",
    ),
    "ruby: a frame": Case(
        {"lib/sinatra/routes.rb": ROUTES_RB, "lib/sinatra/base.rb": BASE_RB},
        "lib/sinatra/base.rb",
        ROUTE_PROSE,
        "```\nlib/sinatra/base.rb:3:in 'Sinatra::Base#route!': undefined method 'any?'\n```\n",
    ),
}


def top_file(repo: Path, index_dir: Path, query: str, **changes: object) -> str:
    settings = Settings(repo=repo, index_dir=index_dir, embed_backend="none", chunk_lines=12)
    settings = settings.with_(**changes)
    with Engine.open(settings) as engine:
        run = engine.search(query, settings)
    return run.files("fused")[0].path


@pytest.mark.parametrize("name", list(CASES))
def test_the_evidence_in_an_issue_ranks_the_file_it_points_at_first(
    name: str, tmp_path: Path
) -> None:
    case = CASES[name]
    repo = tmp_path / "repo"
    for path, text in case.files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
    without = top_file(repo, tmp_path / "index-a", case.prose)
    with_evidence = top_file(repo, tmp_path / "index-b", case.prose + case.evidence)
    assert without != case.target  # the prose alone describes the other file better
    assert with_evidence == case.target


def test_http_2_finds_the_http2_flag(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    files = {
        "httpx/_models.py": (
            '"""HTTP requests and responses: the HTTP version, HTTP headers, HTTP status."""\n'
            "class Response:\n"
            '    http_version = "HTTP/1.1"  # the HTTP version the server answered with\n'
        ),
        "httpx/_transports/default.py": (
            "class HTTPTransport:\n"
            "    def __init__(self, verify=True, http1=True, http2=False):\n"
            "        self._pool = httpcore.ConnectionPool(http1=http1, http2=http2)\n"
        ),
    }
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
    assert top_file(repo, tmp_path / "index", "where is HTTP/2 negotiated") == (
        "httpx/_transports/default.py"
    )


BUF_IMPL_RS = """/// Reading numbers from a buffer.
pub trait Buf {
    /// Gets a signed integer of `nbytes` bytes, big-endian.
    fn get_int(&mut self, nbytes: usize) -> i64 {
        let value = self.get_uint(nbytes);
        value as i64
    }
}
"""
BUF_MUT_RS = """/// Writing numbers into a buffer.
pub trait BufMut {
    /// Writes a signed integer of `nbytes` bytes, big-endian.
    fn put_int(&mut self, n: i64, nbytes: usize) {
        self.put_slice(&n.to_be_bytes()[8 - nbytes..]);
    }
}
"""
TITLED_ISSUE = (
    "`Buf::get_int()` returns a positive number for a negative one when nbytes < 8\n"
    "Steps to reproduce: write a negative number with `BufMut::put_int()` into a buffer of "
    "fewer than eight bytes, then read it back; the number read is positive. The bytes "
    "written keep the sign, and a negative number written should be a negative number read.\n"
    "```\nlet mut buf = BytesMut::with_capacity(8);\nbuf.put_int(-42, 1);\n"
    "assert_eq!(buf.freeze().get_int(1), -42);\n```\n"
)


def test_a_name_in_an_issues_title_outweighs_the_set_up_in_its_body(tmp_path: Path) -> None:
    """The title names the subject (`Buf::get_int`); the body's example code names what it
    needed to get there (`BufMut::put_int`, whose file holds more of the body's words)."""
    repo = tmp_path / "repo"
    for path, text in {
        "src/buf/buf_impl.rs": BUF_IMPL_RS,
        "src/buf/buf_mut.rs": BUF_MUT_RS,
    }.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
    assert top_file(repo, tmp_path / "index-a", TITLED_ISSUE) == "src/buf/buf_impl.rs"
    untitled = top_file(repo, tmp_path / "index-b", TITLED_ISSUE, signal_title=1.0)
    assert untitled == "src/buf/buf_mut.rs"


BUG_TEMPLATE = """---
name: Bug report
about: Create a report to help us improve
---
**Describe the bug**
A clear and concise description of what the bug is.

**Screenshots / Live demo link (paste the stats link as markdown image)**

<!--
PLEASE READ THE FAQs!!!

Q: How to hide a language from the languages card?
Ans: add the hide parameter to the card's link: &hide=javascript,html

Q: Why are the language percentages of my languages card wrong?
Ans: the languages card counts the bytes of every language in your public repositories.
-->
"""
LANGUAGES_CARD_JS = """// The top languages card: the languages of a user's repositories, by bytes.
export function renderTopLanguages(languages, { hide = [] } = {}) {
  // hide: the languages the card's link asks to hide (&hide=javascript,html)
  const shown = languages.filter((language) => !hide.includes(language.name.toLowerCase()));
  const total = shown.reduce((sum, language) => sum + language.size, 0);
  return shown.map((language) => `${language.name} ${(language.size / total) * 100}%`);
}
"""
REPO_CARD_JS = """// The repository card: a pinned repository's name, description and stars.
export function renderRepoCard(repo) {
  // a long name is wrapped onto two lines so it stays inside the card
  const name = wrapText(repo.name, 35);
  return `<svg>${name}<text>${repo.description}</text><text>${repo.stars}</text></svg>`;
}
"""
ISSUE_IN_THE_TEMPLATE = (
    "Bug: word wrapping\n"
    "**Describe the bug**\n"
    "A very long repository name goes outside the repository card, and so do names in other "
    "scripts: the name is not wrapped.\n\n"
    "**Screenshots / Live demo link (paste the stats link as markdown image)**\n"
    "![](https://stats.example/api/pin/?username=someone&repo=a-very-long-repository-name)\n\n"
    + BUG_TEMPLATE[BUG_TEMPLATE.index("<!--") :]
)


def test_an_issue_written_into_the_repositorys_template_is_ranked_by_the_reporters_words(
    tmp_path: Path,
) -> None:
    """The template's FAQ, repeated in the issue, is about the languages card; the reporter's
    own words are about the repository card."""
    files = {
        "src/cards/top-languages-card.js": LANGUAGES_CARD_JS,
        "src/cards/repo-card.js": REPO_CARD_JS,
    }
    for with_template in (False, True):
        repo = tmp_path / f"repo-{with_template}"
        here = (
            {**files, ".github/ISSUE_TEMPLATE/bug_report.md": BUG_TEMPLATE}
            if with_template
            else files
        )
        for path, text in here.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text, encoding="utf-8")
        top = top_file(repo, tmp_path / f"index-{with_template}", ISSUE_IN_THE_TEMPLATE)
        # Without the template in the repository nothing tells its words from the reporter's.
        expected = "src/cards/repo-card.js" if with_template else "src/cards/top-languages-card.js"
        assert top == expected, (with_template, top)
