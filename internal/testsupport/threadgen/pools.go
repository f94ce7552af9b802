package threadgen

import (
	"encoding/base64"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// Text pools. Built once, from a fixed seed, out of templates whose «slots»
// are filled at random; stored already escaped, one line (with its escaped
// newline) per entry, so that generating text is copying.

type pool struct{ lines []string }

const (
	langGo = iota
	langTS
	langPy
	langRust
)

var (
	projectNames  = []string{"amp-exporter", "billing-service", "web-dashboard", "infra", "mobile-app", "ml-pipeline", "docs-site", "api-gateway", "data-loader", "cli-tools", "search-indexer", "auth-proxy"}
	orgNames      = []string{"acme", "globex", "initech", "umbrella-labs", "hooli", "stark-ind"}
	branchNames   = []string{"main", "main", "main", "dev", "feat/retry-backoff", "fix/ws-reconnect", "renovate/go-1.26", "jd/refactor-store", "release/2.4"}
	userNames     = []string{"dev", "alice", "bob", "jdoe", "mkowalski", "sato", "lmüller"}
	funcNames     = []string{"handleRequest", "parseConfig", "NewServer", "retryWithBackoff", "validateToken", "loadThreads", "flushQueue", "applyDelta", "resolvePath", "encodeFrame", "newCollector", "scanDir", "computeCost", "mergeUsage", "renderTemplate", "openDB", "migrate", "watchLoop", "shutdown", "buildIndex"}
	idents        = []string{"ctx", "cfg", "retryCount", "maxBackoff", "req", "resp", "buf", "threadID", "opts", "logger", "deadline", "cacheKey", "tokenTTL", "rows", "err", "userID", "payload", "window", "offset", "limit"}
	typeNames     = []string{"Server", "Config", "Thread", "Usage", "Collector", "Store", "Event", "Options", "Client", "Watcher", "Ledger", "Snapshot"}
	phrases       = []string{"connection reset by peer", "invalid character 'x' in string escape code", "expected 3 rows, got 2", "user not found", "Größe überschritten", "timeout after 30s", "ошибка авторизации", "ファイルが見つかりません", "无效的参数", "unexpected EOF", "it's \"quoted\"", "tab\tseparated", "naïve café", "done ✓", "50% → 75%", "permission denied", "context deadline exceeded", "🚀 shipped", "retry limit reached", "a\\b"}
	errorMessages = []string{
		"Command timed out after 120 seconds",
		"ENOENT: no such file or directory, open '/home/dev/proj/src/missing.ts'",
		"File is too large to read (4.2 MB). Use read_range to read a part of it.",
		"old_str not found in file. Make sure it matches exactly, including whitespace.",
		"Error: fetch failed: getaddrinfo ENOTFOUND internal.example.com",
		"Tool execution failed: MCP server \"github\" disconnected",
		"Path C:\\Users\\dev\\proj\\bin is outside the workspace",
		"Permission denied: \"rm -rf build/\" requires confirmation",
		"rate limited (429): retry after 20s",
	}
	titles = []string{
		"Fix flaky retry test in scheduler", "Add exponential backoff to webhook client", "Investigate memory leak in watcher",
		"Refactor config loading", "Migrate CI to GitHub Actions", "Rename \"ctx\" parameter across handlers",
		"Übersetzung der Fehlermeldungen", "Debug Windows path handling (C:\\Users)", "Speed up JSON decoding",
		"Implement SSE reconnect with Last-Event-Id", "Write tests for the pricing table", "Why does the build fail on arm64?",
		"Set up Prometheus alerts", "ログ出力の修正", "Clean up unused dependencies", "Add dark mode toggle 🌙",
		"Review PR #482: cache invalidation", "Port the CLI to Rust", "Fix off-by-one in pagination", "Upgrade to React 19",
	}
	urls = []string{
		"https://pkg.go.dev/github.com/prometheus/client_golang/prometheus", "https://docs.rs/tokio/latest/tokio/",
		"https://developer.mozilla.org/en-US/docs/Web/API/EventSource", "https://github.com/acme/proj/issues/482",
		"https://ampcode.com/manual", "https://stackoverflow.com/questions/11227809/why-is-processing-a-sorted-array-faster",
		"https://prometheus.io/docs/practices/naming/", "https://www.rfc-editor.org/rfc/rfc9562.html",
		"https://docs.python.org/3/library/asyncio-task.html", "https://react.dev/reference/react/useEffect",
	}
	objectives = []string{
		"Find where the retry limit is configured", "How is the thread file written to disk?", "Explain the cache invalidation logic",
		"Find all callers of the deprecated API", "Check the recommended metric naming", "Summarize the breaking changes in v2",
		"Locate the code that parses usage tokens", "Find tests that cover Windows paths", "Review the diff for concurrency bugs",
	}
	searchQueries = []string{"prometheus counter naming convention", "go fsnotify rename event linux", "tokio select cancel safety", "react 19 useEffect cleanup", "sse last-event-id reconnect", "anthropic prompt caching ttl"}
	grepPatterns  = []string{`func \(s \*Server\) \w+`, `TODO|FIXME`, `\bretry(Count|Limit)\b`, `"C:\\\\Users`, `panic\(`, `^import .* from ['"]react['"]`, `\\d\{4\}-\\d\{2\}`, `unwrap\(\)`, `def test_\w+`, `cacheReadInputTokens`}
)

var langFiles = [4][]string{
	langGo:   {"cmd/server/main.go", "internal/store/store.go", "internal/store/store_test.go", "internal/watch/watcher.go", "internal/watch/poll.go", "pkg/scheduler/retry.go", "pkg/scheduler/retry_test.go", "parser/thread/thread.go", "parser/thread/summary.go", "collector/collector.go", "collector/metrics.go", "internal/config/config.go", "internal/config/config_test.go", "go.mod", "Makefile", "README.md", "internal/sse/client.go", "internal/sse/frame.go", "internal/pricing/table.go", "docs/architecture.md"},
	langTS:   {"src/index.ts", "src/components/Button.tsx", "src/components/ThreadList.tsx", "src/lib/api.ts", "src/lib/api.test.ts", "src/hooks/useThreads.ts", "src/routes/settings.tsx", "src/utils/format.ts", "src/utils/format.test.ts", "package.json", "tsconfig.json", "vite.config.ts", "README.md", "src/server/handler.ts", "src/server/db.ts", "src/styles/theme.css", "docs/setup.md", "src/lib/retry.ts"},
	langPy:   {"app/main.py", "app/models/user.py", "app/models/thread.py", "app/api/routes.py", "app/services/billing.py", "app/utils/retry.py", "tests/test_api.py", "tests/test_billing.py", "tests/conftest.py", "pyproject.toml", "README.md", "scripts/migrate.py", "app/config.py", "app/workers/queue.py", "notebooks/analysis.ipynb", "docs/index.md"},
	langRust: {"src/main.rs", "src/lib.rs", "src/config.rs", "src/store/mod.rs", "src/store/sqlite.rs", "src/watch.rs", "src/parse/thread.rs", "src/parse/usage.rs", "crates/core/src/lib.rs", "crates/core/src/error.rs", "tests/integration.rs", "Cargo.toml", "README.md", "benches/decode.rs", "src/bin/cli.rs", "build.rs"},
}

var commands = [4][]string{
	langGo:   {"go test ./...", "go test ./pkg/scheduler/ -run 'TestRetry/with_jitter' -count=1 -v", "go build ./... && go vet ./...", "golangci-lint run ./...", "git status && git diff --stat", "rg -n \"panic\\(\" --glob '*.go'", "go test -race ./internal/... 2>&1 | tail -50", "ls -la internal/store", "git log --oneline -20", "make lint test"},
	langTS:   {"npm test", "npm run build", "npx tsc --noEmit", "pnpm vitest run src/lib/api.test.ts", "npx eslint src --ext .ts,.tsx", "git status", "ls -la src/components", "npm install zod@latest", "grep -rn \"useEffect\" src/ | head -30", "docker compose logs api --tail 200"},
	langPy:   {"pytest -x -q", "pytest tests/test_billing.py -k 'test_credits and not slow' -vv", "python -m mypy app", "ruff check .", "uv pip install -r requirements.txt", "git diff HEAD~1", "python scripts/migrate.py --dry-run", "ls -la app/models", "tail -n 200 logs/worker.log", "python -c \"import json,sys; print(json.load(open('data.json'))['items'][0])\""},
	langRust: {"cargo build", "cargo test -- --nocapture", "cargo clippy --all-targets -- -D warnings", "cargo test parse::usage -- --exact", "git status", "cargo fmt --check", "ls -la src/store", "RUST_BACKTRACE=1 cargo run -- --dir ./fixtures", "cargo bench --bench decode", "git log -p -1 -- src/watch.rs"},
}

var globPatterns = [4][]string{
	langGo:   {"**/*.go", "**/*_test.go", "internal/**/*.go", "**/testdata/*.json"},
	langTS:   {"src/**/*.tsx", "**/*.test.ts", "src/**/*.{ts,tsx}", "**/package.json"},
	langPy:   {"**/*.py", "tests/**/test_*.py", "app/**/*.py", "**/*.toml"},
	langRust: {"src/**/*.rs", "**/Cargo.toml", "tests/*.rs", "crates/*/src/**/*.rs"},
}

var (
	proseThinking = []string{
		"Let me look at how «f» handles the error path in «F».",
		"The test fails because «f» returns early when the context is cancelled, so «I» is never incremented.",
		"I should check whether `«I»` is set before «f» is called.",
		"Looking at the output, the failure is in «F»:«N» — expected \"«S»\" but got \"«S»\".",
		"The user wants this fixed without changing the public API, so I'll keep the signature of «f».",
		"Hmm, the regex `^\\d{4}-\\d{2}-\\d{2}T` doesn't match a timestamp with a trailing Z.",
		"On Windows the path would be `C:\\Users\\dev\\«P»\\«F»`, so I need filepath.Join instead of string concatenation.",
		"The error message says “«S»”, which comes from the localized strings.",
		"Wait — «T».«f» holds the lock while calling out to the network. That's the deadlock.",
		"I'll read «F» first, then run the tests to confirm the failure before changing anything.",
		"There are «N» callers of «f»; only two of them pass a nil «I».",
		"The JSON in the fixture has escaped quotes (\\\"), so the parser must unescape before comparing.",
		"So the sequence is: «f» → «f» → «f». The second call races with the first.",
		"Actually, simpler: move the check into «f» and return «E» from there.",
		"Tests pass now. I should also run the linter and check the Windows build.",
		"«u»",
		"The benchmark shows «N» ns/op before and «N» ns/op after, which is within noise.",
		"I need to be careful: «I» is shared between goroutines.",
	}
	proseText = []string{
		"I'll update «f» to handle the nil case.",
		"Running the tests now.",
		"Found it: «F»:«N» uses `«I»` before it is initialised.",
		"Let me check the other callers of «f».",
		"The build passes; now the tests.",
		"I'll read «F» to see how «T» is constructed.",
		"That failed with “«S»” — trying a different approach.",
		"Now I'll add a regression test in «F».",
		"Searching for usages of `«I»` across the repo.",
		"«u»",
	}
	prosePrompt = []string{
		"fix the failing test in «F»",
		"why does «f» panic when the config is empty?",
		"can you add retries to «f»? use exponential backoff with jitter, max «N» attempts",
		"Übersetze bitte die Fehlermeldungen in «F» ins Deutsche.",
		"このテストが失敗する理由を調べてください: «F»",
		"the build fails on windows with `C:\\Users\\dev\\«P»\\«F»: access denied`",
		"rename «I» to something clearer everywhere, and update the docs",
		"run the tests and fix whatever is broken",
		"look at the last commit, does it introduce a race?",
		"ok, now commit this with a good message",
		"make «f» return an error instead of logging \"«S»\"",
		"add a --dry-run flag to the migrate script",
		"that's wrong, the limit should be «N» not «N». also keep the old behaviour behind a flag",
		"write a benchmark for «f» and tell me the numbers",
		"¿puedes explicar qué hace «f»?",
	}
	proseUnicode = []string{
		"Résumé: the naïve approach works, but it's O(n²) — fine for «N» items.",
		"✓ build  ✓ vet  ✗ test («N» failures)",
		"Die Funktion «f» gibt bei leerer Eingabe „nil“ zurück.",
		"注意：«F» 的编码是 UTF-8，不是 GBK。",
		"テストは «N» 件成功しました 🎉",
		"Ошибка: «S»",
		"Latency dropped from «N» ms → «N» ms (−«N»%).",
	}
	markdownLines = []string{
		"## Summary", "### What changed", "### Why", "## Test plan", "",
		"- Fixed `«f»` in [«F»](file:///home/dev/«P»/«F»#L«N»)",
		"- Added a regression test for «S»",
		"- Renamed `«I»` → `«I»` (no behaviour change)",
		"1. Run `«C»`", "2. Check the output for `«S»`",
		"**Note:** the old behaviour is kept behind `--legacy-«I»`.",
		"| file | change |", "|---|---|", "| `«F»` | +«N» −«N» |",
		"> «S»",
		"The root cause was that «f» ignored the «I» returned by «f».",
		"All «N» tests pass ✓. Lint is clean.",
		"«u»",
		"```«L»", "«K»", "«K»", "«K»", "```",
		"See «U» for details.",
	}
)

var codeTemplates = [4][]string{
	langGo: {
		"package «P»", "", "import (", "\t\"context\"", "\t\"fmt\"", "\t\"regexp\"", ")",
		"// «f» «S».",
		"func (s *«T») «f»(ctx context.Context, «I» string) error {",
		"\tif «I» == \"\" {", "\t\treturn fmt.Errorf(\"«f»: empty «I»: %w\", ErrInvalid)", "\t}",
		"\tfor i := 0; i < s.«I»; i++ {", "\t\tselect {", "\t\tcase <-ctx.Done():", "\t\t\treturn ctx.Err()", "\t\tdefault:", "\t\t}",
		"\tvar dateRE = regexp.MustCompile(`^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}`)",
		"\tuncRE := regexp.MustCompile(\"^\\\\\\\\\\\\\\\\[^\\\\\\\\]+\\\\\\\\\")",
		"\tpath := \"C:\\\\Users\\\\dev\\\\«P»\\\\«F»\"",
		"\tmsg := fmt.Sprintf(\"%s: \\\"%s\\\"\\n\", «I», «S»)",
		"\t\ts.logger.Warn(\"«S»\", \"err\", err, \"«I»\", «I»)",
		"\treturn nil", "}", "",
		"type «T» struct {", "\t«I»  int64  `json:\"«I»\"`", "\tName string `json:\"name,omitempty\"`", "}",
		"\t// «u»",
		"\tif err := «f»(ctx, «I»); err != nil {", "\t\treturn err", "\t}",
		"\tdefer func() { _ = f.Close() }()",
		"\tb = append(b, '\"', '\\\\', 'n')",
	},
	langTS: {
		"import { «f» } from './«I»';", "import React, { useEffect, useState } from 'react';",
		"export async function «f»(«I»: string, opts: «T»Options = {}): Promise<«T»> {",
		"  const res = await fetch(`${baseUrl}/api/v1/«I»?limit=${opts.limit ?? «N»}`);",
		"  if (!res.ok) throw new Error(`«f» failed: ${res.status} \"${await res.text()}\"`);",
		"  return (await res.json()) as «T»;", "}", "",
		"  const re = /^[A-Z]:\\\\(?:[^\\\\/:*?\"<>|\\r\\n]+\\\\)*$/;",
		"  const winPath = 'C:\\\\Users\\\\dev\\\\«P»';",
		"export const «I» = «N»;",
		"  useEffect(() => {", "    const id = setInterval(«f», «N»);", "    return () => clearInterval(id);", "  }, [«I»]);",
		"  // «u»",
		"  return <div className=\"«I»\">{t('«S»')}</div>;",
		"describe('«f»', () => {", "  it('handles «S»', async () => {", "    expect(await «f»('«S»')).toEqual({ «I»: «N» });", "  });", "});",
		"\tconsole.log(JSON.stringify({ «I», msg: \"«S»\" }, null, 2));",
	},
	langPy: {
		"import re", "from dataclasses import dataclass", "from typing import Optional", "",
		"@dataclass", "class «T»:", "    «I»: int = «N»", "    name: Optional[str] = None", "",
		"def «f»(«I»: str, *, retries: int = «N») -> «T»:",
		"    \"\"\"«S».\"\"\"",
		"    if not «I»:", "        raise ValueError(f\"invalid «I»: {«I»!r}\")",
		"    pattern = re.compile(r\"^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}\")",
		"    path = \"C:\\\\Users\\\\dev\\\\«P»\\\\«F»\"",
		"    for attempt in range(retries):", "        try:", "            return _client.get(«I»)", "        except TimeoutError as exc:",
		"            log.warning(\"«S» (attempt %d): %s\", attempt, exc)",
		"    # «u»", "    return «T»()", "",
		"def test_«f»(tmp_path):", "    assert «f»(\"«S»\") == «T»(«I»=«N»)",
	},
	langRust: {
		"use std::path::PathBuf;", "use serde::{Deserialize, Serialize};", "",
		"#[derive(Debug, Clone, Serialize, Deserialize)]", "pub struct «T» {", "    pub «I»: u64,", "    #[serde(rename = \"«I»\")]", "    pub name: Option<String>,", "}", "",
		"pub fn «f»(«I»: &str) -> Result<«T», Error> {",
		"    let re = Regex::new(r\"^\\\\\\\\\\?\\\\[A-Z]:\\\\\").unwrap();",
		"    let path = PathBuf::from(\"C:\\\\Users\\\\dev\\\\«P»\");",
		"    let msg = format!(\"{}: \\\"{}\\\"\\n\", «I», \"«S»\");",
		"    if «I».is_empty() {", "        return Err(Error::Invalid(\"«S»\".into()));", "    }",
		"    // «u»", "    Ok(«T» { «I»: «N», name: None })", "}", "",
		"#[test]", "fn «f»_works() {", "    assert_eq!(«f»(\"«S»\").unwrap().«I», «N»);", "}",
	},
}

var shellTemplates = [][]string{
	{ // go test
		"=== RUN   Test«T»«f»", "=== RUN   Test«T»«f»/with_«I»", "--- PASS: Test«T»«f» (0.«N»s)", "--- FAIL: Test«T»«f»/with_«I» (0.«N»s)",
		"    «F»:«N»: got \"«S»\", want \"«S»\"", "    «F»:«N»: unexpected error: «E»",
		"FAIL\tgithub.com/«O»/«P»/internal/«I»\t0.«N»s", "ok  \tgithub.com/«O»/«P»/internal/«I»\t(cached)", "ok  \tgithub.com/«O»/«P»/pkg/«I»\t«N».«N»s",
		"panic: runtime error: index out of range [«N»] with length «N»", "goroutine «N» [running]:",
		"github.com/«O»/«P»/internal/«I».(*«T»).«f»(0xc000«H»)", "\t/home/dev/«P»/«F»:«N» +0x«H»",
		"WARNING: DATA RACE", "Write at 0x00c000«H» by goroutine «N»:",
	},
	{ // npm, tsc, vitest
		"\u001b[32m✓\u001b[39m «S» \u001b[2m(«N» ms)\u001b[22m", "\u001b[31m✗\u001b[39m «S»", "\u001b[31m\u001b[1mFAIL\u001b[22m\u001b[39m src/«I».test.ts > «f» > handles «S»",
		"src/«F»(«N»,«N»): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
		"  \u001b[36m➜\u001b[39m  \u001b[1mLocal\u001b[22m:   \u001b[36mhttp://localhost:5173/\u001b[39m",
		"npm warn deprecated «I»@«N».«N».«N»: This package is no longer supported.",
		"\u001b[1m\u001b[33mwarning\u001b[39m\u001b[22m  «S»  \u001b[2m@typescript-eslint/no-unused-vars\u001b[22m",
		"> «P»@0.1.0 build", "> vite build", "\u001b[2K\u001b[1Gtransforming («N») src/«F»",
		"    AssertionError: expected { «I»: «N» } to deeply equal { «I»: «N» }", "     ❯ src/«F»:«N»:«N»",
		"added «N» packages, and audited «N» packages in «N»s",
	},
	{ // cargo
		"   \u001b[1m\u001b[32mCompiling\u001b[0m «P» v0.«N».«N» (/home/dev/«P»)", "\u001b[1m\u001b[33mwarning\u001b[0m\u001b[1m: unused variable: `«I»`\u001b[0m",
		"  \u001b[1m\u001b[34m-->\u001b[0m src/«F»:«N»:«N»", "   \u001b[1m\u001b[34m|\u001b[0m", "\u001b[1m\u001b[34m«N»\u001b[0m \u001b[1m\u001b[34m|\u001b[0m     let «I» = «f»(&ctx)?;",
		"    \u001b[1m\u001b[32mFinished\u001b[0m `dev` profile [unoptimized + debuginfo] target(s) in «N».«N»s",
		"error[E0502]: cannot borrow `«I»` as mutable because it is also borrowed as immutable",
		"test parse::«I»::«f» ... ok", "test parse::«I»::«f» ... FAILED", "thread 'main' panicked at src/«F»:«N»:«N»:",
		"called `Result::unwrap()` on an `Err` value: «E»", "test result: FAILED. «N» passed; «N» failed; 0 ignored; 0 measured",
	},
	{ // python
		"Traceback (most recent call last):", "  File \"/home/dev/«P»/«F»\", line «N», in «f»", "    raise ValueError(f\"invalid «I»: {value!r}\")",
		"ValueError: invalid «I»: '«S»'", "============ «N» passed, «N» failed, «N» warnings in «N».«N»s ============",
		"FAILED tests/test_«I».py::test_«f» - AssertionError: assert '«S»' == '«S»'", "E       KeyError: '«I»'",
		"\u001b[32mPASSED\u001b[0m tests/test_«I».py::test_«f»[«S»]", "«F»:«N»: error: Incompatible types in assignment  [assignment]",
		"DEBUG:urllib3.connectionpool:https://api.example.com:443 \"GET /v1/«I» HTTP/1.1\" 200 «N»",
	},
	{ // git
		"commit «X»", "Author: «A» <«A»@example.com>", "Date:   Tue Feb 10 16:35:33 2026 +0100", "", "    «S»",
		" «F» | «N» +++++----", " «N» files changed, «N» insertions(+), «N» deletions(-)", "diff --git a/«F» b/«F»",
		"index «H»..«H» 100644", "@@ -«N»,«N» +«N»,«N» @@ func «f»(", "On branch main", "Your branch is ahead of 'origin/main' by «N» commits.",
		"\tmodified:   «F»", "«H» «S»",
	},
	{ // service logs, JSON and ANSI
		"{\"level\":\"info\",\"ts\":\"2026-02-10T16:35:33.«N»Z\",\"msg\":\"request completed\",\"path\":\"/api/v1/«I»\",\"status\":200,\"duration_ms\":«N»}",
		"{\"level\":\"error\",\"ts\":\"2026-02-10T16:35:34.«N»Z\",\"msg\":\"«E»\",\"err\":\"«S»\",\"caller\":\"«F»:«N»\"}",
		"{\"msg\":\"config loaded\",\"path\":\"C:\\\\Users\\\\dev\\\\«P»\\\\config.yaml\",\"raw\":\"{\\\"a\\\":\\\"b\\\\\\\\c\\\"}\"}",
		"\u001b[2m2026-02-10T16:35:33Z\u001b[0m \u001b[32m INFO\u001b[0m \u001b[2m«P»::«I»\u001b[0m: server started addr=0.0.0.0:«N»",
		"\u001b[2m2026-02-10T16:35:35Z\u001b[0m \u001b[33m WARN\u001b[0m «S» retry=«N»", "api-1  | «S»", "worker-1  | \u001b[31mERROR\u001b[0m «E»",
		"Downloading «I» [=====>          ] «N»%\r", "\u0007\u001b]0;«P»\u0007",
	},
	{ // windows
		"PS C:\\Users\\dev\\«P»> dotnet build", "  «P» -> C:\\Users\\dev\\source\\repos\\«P»\\bin\\Debug\\net8.0\\«P».dll",
		"C:\\Users\\dev\\«P»\\src\\«T».cs(«N»,«N»): error CS0103: The name '«I»' does not exist in the current context [C:\\Users\\dev\\«P»\\«P».csproj]",
		"\\\\?\\C:\\Users\\dev\\AppData\\Local\\Temp\\«H»\\«I».tmp", "Select-String -Pattern '\\\\\\\\server\\\\share\\\\[^\\\\]+' -Path .\\logs\\*.log",
		"    Directory: C:\\Users\\dev\\«P»\\src", "-a----        10/02/2026     16:35          «N» «I».cs", "Build succeeded.", "    «N» Warning(s)",
	},
	{ // ls, find, du
		"-rw-r--r--  1 dev dev  «N» Feb 10 16:35 «F»", "drwxr-xr-x  «N» dev dev  4096 Feb  9 09:12 «I»", "total «N»",
		"./«F»", "«N»\t./«I»", "lrwxrwxrwx  1 dev dev    «N» Feb  1 11:02 current -> releases/«H»",
	},
}

var deployTemplates = []string{
	"==> Building image registry.example.com/«P»:«H»", "Step «N»/«N» : RUN go build -trimpath -o /out/«P» ./cmd/«P»",
	" ---> Using cache", " ---> «H»", "\u001b[32m✔\u001b[0m Pushed registry.example.com/«P»:«H»",
	"deployment.apps/«P» configured", "Waiting for deployment \"«P»\" rollout to finish: «N» of «N» updated replicas are available...",
	"\u001b[32m✔\u001b[0m Deployed «P» to staging (revision «N»)", "\u001b[31m✘\u001b[0m Health check failed: «E»",
}

var jsonTextTemplates = []string{
	"{\"path\":\"«F»\",\"repository\":\"«O»/«P»\",\"sha\":\"«X»\",\"text_matches\":[{\"fragment\":\"func «f»(ctx context.Context) error {\\n\\treturn «f»(ctx, \\\"«S»\\\")\\n}\"}]}",
	"{\"path\":\"«F»\",\"repository\":\"«O»/«P»\",\"text_matches\":[{\"fragment\":\"re := regexp.MustCompile(`\\\\d+\\\\.\\\\d+`)\"}]}",
	"Found «N» results in «O»/«P»:", "«F»:«N»: «K»",
}

// expand fills the «slots» of a template.
func expand(r *rand.Rand, tpl string, lang int) string {
	b := make([]byte, 0, len(tpl)+32)
	for {
		i := strings.Index(tpl, "«")
		if i < 0 {
			return string(append(b, tpl...))
		}
		b = append(b, tpl[:i]...)
		tpl = tpl[i+len("«"):]
		j := strings.Index(tpl, "»")
		slot := tpl[:j]
		tpl = tpl[j+len("»"):]
		switch slot {
		case "F":
			b = append(b, pick(r, langFiles[lang])...)
		case "f":
			b = append(b, pick(r, funcNames)...)
		case "I":
			b = append(b, pick(r, idents)...)
		case "T":
			b = append(b, pick(r, typeNames)...)
		case "N":
			b = strconv.AppendInt(b, int64(r.IntN(1000)), 10)
		case "P":
			b = append(b, pick(r, projectNames)...)
		case "O":
			b = append(b, pick(r, orgNames)...)
		case "A":
			b = append(b, pick(r, userNames)...)
		case "S":
			b = append(b, pick(r, phrases)...)
		case "E":
			b = append(b, pick(r, errorMessages)...)
		case "H":
			b = append(b, randHex(r, 7)...)
		case "X":
			b = append(b, randHex(r, 40)...)
		case "U":
			b = append(b, pick(r, urls)...)
		case "C":
			b = append(b, pick(r, commands[lang])...)
		case "L":
			b = append(b, [...]string{"go", "ts", "python", "rust"}[lang]...)
		case "K":
			k := expand(r, pick(r, codeTemplates[lang]), lang)
			b = append(b, k...)
		case "u":
			b = append(b, expand(r, pick(r, proseUnicode), lang)...)
		default:
			panic("threadgen: unknown slot " + slot)
		}
	}
}

// buildPool expands n lines from templates (picked in runs, in order, so
// consecutive lines look like one file or one log) and escapes them, each
// ending with sep (escaped).
func buildPool(r *rand.Rand, templates []string, n int, sep func() string) *pool {
	p := &pool{lines: make([]string, n)}
	j := 0
	for i := range p.lines {
		if r.IntN(4) == 0 {
			j = r.IntN(len(templates))
		}
		lang := r.IntN(4)
		s := expand(r, templates[j], lang)
		p.lines[i] = string(appendEscaped(nil, s+sep()))
		j = (j + 1) % len(templates)
	}
	return p
}

var (
	poolsOnce                                                                  sync.Once
	poolThinking, poolText, poolPrompt, poolMarkdown, poolDeploy, poolJSONText *pool
	codePools                                                                  [4]*pool
	shellPools                                                                 []*pool
	b64Pool                                                                    string // random base64 that images and signatures are cut from
)

// buildPools builds the text pools, once, the first time New is called.
func buildPools() {
	r := rand.New(rand.NewPCG(0x706f6f6c, 0x73)) // fixed: pools are the same in every run
	raw := make([]byte, 3<<20)
	for i := 0; i < len(raw); i += 8 {
		x := r.Uint64()
		for j := 0; j < 8 && i+j < len(raw); j++ {
			raw[i+j] = byte(x >> (8 * j))
		}
	}
	b64Pool = base64.StdEncoding.EncodeToString(raw)
	nl := func() string { return "\n" }
	para := func() string {
		if r.IntN(5) == 0 {
			return "\n\n"
		}
		return " "
	}
	rnd := func(ts []string) []string { // prose: pick at random, not in runs
		out := make([]string, len(ts))
		copy(out, ts)
		return out
	}
	poolThinking = buildPool(r, rnd(append(proseThinking, proseText...)), 2048, para)
	poolText = buildPool(r, proseText, 1024, para)
	poolPrompt = buildPool(r, append(prosePrompt, proseUnicode...), 1024, para)
	poolMarkdown = buildPool(r, markdownLines, 4096, nl)
	poolDeploy = buildPool(r, deployTemplates, 1024, nl)
	poolJSONText = buildPool(r, jsonTextTemplates, 1024, nl)
	for lang := range codePools {
		tpl := codeTemplates[lang]
		p := &pool{lines: make([]string, 4096)}
		j := 0
		for i := range p.lines {
			if r.IntN(8) == 0 {
				j = r.IntN(len(tpl))
			}
			p.lines[i] = string(appendEscaped(nil, expand(r, tpl[j], lang)+"\n"))
			j = (j + 1) % len(tpl)
		}
		codePools[lang] = p
	}
	for _, tpl := range shellTemplates {
		shellPools = append(shellPools, buildPool(r, tpl, 4096, nl))
	}
}
