#!/usr/bin/env python3
"""Generate a large benchmark checkpoint database, written directly with SQL.

    python bench/make_db.py sqlite PATH     [--threads 10000] [--checkpoints 1000000] [--seed 1]
    python bench/make_db.py postgres DSN    [same options] [--meta FILE]

The table follows docs/formats/agentos.md (the AgentOS checkpoint format) and is
filled the way the AgentOS writer would have filled it over ~60 days: rows interleaved
in time order across threads, `ckpt-{thread}-{step}-{6 hex}` ids, parent links, branch
threads, one long thread, two ~5 MB states, and the odd rows real writers leave behind
(a restarted step counter, a parent deleted by GC).

This script deliberately does not import agentctl: it is the independent yardstick the
library is measured against. Output is deterministic for a given seed and size.

stdout: a JSON object with the ids a benchmark needs (also written to PATH.meta.json for
SQLite, or to --meta FILE). stderr: a one-line summary (rows, threads, bytes, seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

# --------------------------------------------------------------------------- schema

# Verbatim from FORMAT.md (SQLite keeps this text in sqlite_master).
SQLITE_TABLE_DDL = """\
CREATE TABLE IF NOT EXISTS checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL UNIQUE,
    parent_id TEXT,
    step INTEGER NOT NULL,
    created_at TEXT NOT NULL,              -- ISO-8601, usually with +00:00
    tags TEXT NOT NULL DEFAULT '[]',       -- JSON array of strings
    summary TEXT NOT NULL DEFAULT '',
    messages_blob TEXT NOT NULL DEFAULT '[]',  -- JSON array of {"role", "content", ...}
    state_blob TEXT NOT NULL DEFAULT '{}',     -- JSON object
    tools_blob TEXT NOT NULL DEFAULT '{}',     -- JSON object
    next_node TEXT NOT NULL DEFAULT ''
);"""

SQLITE_INDEX_DDL = [
    "CREATE INDEX IF NOT EXISTS idx_thread_step ON checkpoints(thread_id, step DESC);",
    "CREATE INDEX IF NOT EXISTS idx_checkpoint_id ON checkpoints(checkpoint_id);",
    "CREATE INDEX IF NOT EXISTS idx_parent ON checkpoints(parent_id);",
]

# FORMAT.md's Postgres variant: same columns, BIGSERIAL / TIMESTAMPTZ / JSONB, one more index.
PG_TABLE_DDL = """\
CREATE TABLE IF NOT EXISTS checkpoints (
    id BIGSERIAL PRIMARY KEY,
    thread_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL UNIQUE,
    parent_id TEXT,
    step INTEGER NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    tags JSONB NOT NULL DEFAULT '[]',
    summary TEXT NOT NULL DEFAULT '',
    messages_blob JSONB NOT NULL DEFAULT '[]',
    state_blob JSONB NOT NULL DEFAULT '{}',
    tools_blob JSONB NOT NULL DEFAULT '{}',
    next_node TEXT NOT NULL DEFAULT ''
);"""

PG_INDEX_DDL = [
    "CREATE INDEX IF NOT EXISTS idx_thread_step ON checkpoints(thread_id, step DESC);",
    "CREATE INDEX IF NOT EXISTS idx_checkpoint_id ON checkpoints(checkpoint_id);",
    "CREATE INDEX IF NOT EXISTS idx_parent ON checkpoints(parent_id);",
    "CREATE INDEX IF NOT EXISTS idx_created_at ON checkpoints(created_at DESC);",
]

COLUMNS = (
    "thread_id",
    "checkpoint_id",
    "parent_id",
    "step",
    "created_at",
    "tags",
    "summary",
    "messages_blob",
    "state_blob",
    "tools_blob",
    "next_node",
)

# ------------------------------------------------------------------------ constants

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
END = datetime(2025, 6, 30, 18, 0, tzinfo=timezone.utc)  # fixed: output must not depend on "now"
SPAN_S = 60 * 86400
START_US = int((END - EPOCH).total_seconds() - SPAN_S) * 1_000_000

# Thread roles in the plan.
REGULAR, BRANCH, BIG = 0, 1, 2

# What the writer's json.dumps(..., ensure_ascii=False) produces: ", " and ": " separators.
dumps = json.JSONEncoder(ensure_ascii=False).encode
TAG_JSON = {
    t: json.dumps([t])
    for t in ("tool_call", "llm_call", "state_change", "task_boundary", "manual", "interval")
}


class UsageError(Exception):
    """Bad arguments or a target we refuse to overwrite (exit code 2)."""


class TargetError(Exception):
    """The target cannot be reached (exit code 1)."""


# ------------------------------------------------------------------ message pools
# Each pool entry is (message JSON text, summary text) built once at start-up; a row
# only joins pre-serialised fragments. "@CALL@" links an assistant tool call to the
# tool message answering it and is substituted per call.

SUPPORT_SYSTEM = (
    "You are Aria, the customer support assistant for Northwind Outfitters. Be concise and "
    "friendly. Always verify the customer's identity before changing an order. Use the tools "
    "to look up orders, refunds and shipping; never invent tracking numbers. Escalate to a "
    "human agent when the customer asks twice or mentions legal action. "
    "回答中文用户时使用简体中文。"
)
CODER_SYSTEM = (
    "You are a senior software engineer working in the user's repository. Read files before "
    "editing them, keep patches minimal, run the test suite after each change and report the "
    "result. Prefer small, reviewable diffs; explain the root cause of every bug you fix. "
    "Tools: read_file, grep, apply_patch, run_tests, run_shell, list_dir."
)

SUPPORT_USER_EN = [
    "Hi, my order #{order} still hasn't arrived. It was supposed to be delivered on {date}.",
    "Can I change the shipping address for order #{order}? I moved to {street} last week.",
    "I was charged twice for my {plan} subscription this month ({amount} each). Please fix this.",
    "The app keeps logging me out since the last update. I'm on iOS 17, account {email}.",
    "How do I export all my invoices from {year} as PDF?",
    "The jacket in order #{order} arrived with a broken zipper. I'd like a refund or a replacement.",
    "What's your return policy for sale items? I bought boots on {date}.",
    "I never received the confirmation email for order #{order}. Can you resend it to {email}?",
    "Is the {product} back in stock in size {size}? The page says 'coming soon' for weeks.",
    "Please cancel order #{order}, I ordered the wrong colour.",
    "Thanks, but the tracking link says 'label created' for {n} days now. Is it lost?",
    "Can you apply the WELCOME15 discount to order #{order}? I forgot to enter it at checkout.",
    "ok that works, thank you!",
    "No, that's not what I asked. I want the money back on my card, not store credit.",
]
SUPPORT_USER_ZH = [
    "你好，我的订单 #{order} 到现在还没有收到，能帮我查一下物流吗？",
    "我想把 {plan} 套餐升级到专业版，需要补多少差价？",
    "为什么我的账户被锁定了？我只是输错了几次密码。邮箱是 {email}",
    "发票抬头填错了，可以重新开一张吗？订单号 #{order}",
    "退款什么时候能到账？已经过去 {n} 天了。",
    "收到的 {product} 尺码不对，想换成 {size} 码，怎么操作？",
    "好的，谢谢你的帮助！",
    "这个商品 {date} 之前能送到上海吗？",
]
SUPPORT_ANSWER_EN = [
    "Your order #{order} is in transit with {carrier} and should arrive by {date}. I've added a "
    "note asking the carrier to prioritise it.",
    "I've issued a refund of {amount} to your original payment method. It usually shows up within "
    "3-5 business days.",
    "I found the duplicate charge of {amount} on {date} and reversed it. Sorry about that!",
    "Done: the shipping address for order #{order} is now {street}. You'll get an updated "
    "confirmation email shortly.",
    "I've escalated this to our returns team (ticket {ticket}). A specialist will contact you "
    "within 24 hours.",
    "The {product} is expected back in stock on {date}. I can notify you at {email} when it is.",
    "Order #{order} has been cancelled and the authorisation on your card will be released.",
    "You can export invoices under Account > Billing > Invoices > Export (PDF or CSV).",
    "I applied the WELCOME15 code: the new total for #{order} is {amount}.",
]
SUPPORT_ANSWER_ZH = [
    "您的订单 #{order} 已由 {carrier} 承运，预计 {date} 送达，我已备注加急处理。",
    "已为您办理退款 {amount}，一般 3-5 个工作日内原路退回。",
    "已为您重新开具发票，稍后会发送到 {email}。",
    "您的账户已解锁，建议尽快修改密码并开启两步验证。",
    "换货申请已提交（工单号 {ticket}），快递员会在 {date} 上门取件。",
    "专业版差价为 {amount}，确认后我可以直接为您升级。",
]
SUPPORT_CALL_TEXT = [
    "",
    "",
    "Let me check that for you.",
    "One moment, I'm looking this up.",
    "我帮您查一下。",
]
SUPPORT_TOOLS: dict[str, tuple[Callable[[dict], dict], Callable[[dict], str]]] = {
    "lookup_order": (
        lambda f: {"order_id": f["order"]},
        lambda f: dumps(
            {
                "order_id": f["order"],
                "status": f["status"],
                "carrier": f["carrier"],
                "tracking": f["tracking"],
                "eta": f["date"],
                "items": [{"sku": f["sku"], "name": f["product"], "qty": 1, "price": f["amount"]}],
            }
        ),
    ),
    "get_customer": (
        lambda f: {"email": f["email"]},
        lambda f: dumps(
            {
                "customer_id": f["cust"],
                "name": f["name"],
                "email": f["email"],
                "tier": f["tier"],
                "orders_last_year": f["n"],
                "locked": False,
            }
        ),
    ),
    "issue_refund": (
        lambda f: {"order_id": f["order"], "amount": f["amount"], "reason": "damaged_item"},
        lambda f: dumps(
            {"refund_id": "re_" + f["hex8"], "status": "pending", "amount": f["amount"], "currency": "USD"}
        ),
    ),
    "search_kb": (
        lambda f: {"query": f["query"], "top_k": 3},
        lambda f: dumps(
            {
                "hits": [
                    {"id": "kb-%d" % (f["n"] * 7 + i), "title": t, "score": s}
                    for i, (t, s) in enumerate(f["kb"])
                ]
            }
        ),
    ),
    "update_address": (
        lambda f: {"order_id": f["order"], "address": f["street"]},
        lambda f: "OK: address updated for order %s" % f["order"],
    ),
}

CODER_USER_EN = [
    "The test {test} in {file} fails with KeyError: 'tz'. Can you fix it?",
    "Add retry with exponential backoff to the HTTP client in {file}.",
    "Why is {func}() so slow on large inputs? It takes {ms} ms for 10k rows.",
    "Please write unit tests for {func} in {file}; coverage there is {n}%.",
    "CI is red on main: `{test}` times out after 30s. Investigate.",
    "Rename the config key `timeout_s` to `request_timeout_s` everywhere, keep a deprecation alias.",
    "looks good, commit it",
    "That broke the Windows build, paths need os.path.join not '/' concatenation.",
]
CODER_USER_ZH = [
    "请帮我重构 {file} 里的 {func} 函数，太长了，拆成几个小函数。",
    "为什么 {test} 在本地能过，CI 上却失败？",
    "给 {func} 加上类型注解，并修复 mypy 报的错误。",
    "好的，继续。",
]
CODER_ANSWER_EN = [
    "Root cause: `{func}` assumed every record has a `tz` field, but legacy rows don't. I "
    "defaulted it to UTC and added a regression test; all {n} tests pass.",
    "I added `retry_with_backoff(max_attempts=5, base=0.2)` around the request in {file} and "
    "made it honour `Retry-After`. Tests: {n} passed.",
    "The slowdown comes from building a new list in a loop (O(n^2)). Switching to a dict lookup "
    "brings it down to {ms} ms.",
    "Here's the change:\n```python\ndef {func}(rows):\n    index = {{r.id: r for r in rows}}\n"
    "    return [index[i] for i in ids if i in index]\n```\nThe suite is green ({n} passed).",
    "Done. The rename touched {n} files; the old key still works but logs a DeprecationWarning.",
]
CODER_ANSWER_ZH = [
    "问题出在 `{func}` 没有处理空列表，我加了边界判断和对应的测试，{n} 个测试全部通过。",
    "已经把 {func} 拆成三个函数：解析、校验、写入。行为不变，测试通过。",
]
CODER_CALL_TEXT = [
    "",
    "",
    "Let me look at the code first.",
    "Running the tests.",
    "I'll search for the other call sites.",
]
CODER_TOOLS: dict[str, tuple[Callable[[dict], dict], Callable[[dict], str]]] = {
    "read_file": (
        lambda f: {"path": f["file"]},
        lambda f: (
            '"""%s"""\nfrom datetime import datetime, timezone\n\n\n'
            "def %s(rows, *, tz=None):\n"
            '    out = []\n    for r in rows:\n        ts = r["ts"]\n'
            "        out.append(datetime.fromtimestamp(ts, tz or timezone.utc))\n"
            "    return out\n" % (f["file"], f["func"])
        ),
    ),
    "run_tests": (
        lambda f: {"path": "tests/", "args": ["-x", "-q"]},
        lambda f: (
            "%s\n%s F\n=================================== FAILURES "
            "===================================\nE   KeyError: 'tz'\n"
            "========== %d passed, 1 failed in %.2fs =========="
            % ("." * 40, f["test"], f["n"], f["ms"] / 1000)
        ),
    ),
    "grep": (
        lambda f: {"pattern": f["func"], "path": "src/"},
        lambda f: "\n".join(
            "src/%s:%d:    %s(rows)" % (p, f["n"] + i * 13, f["func"]) for i, p in enumerate(f["paths"])
        ),
    ),
    "apply_patch": (
        lambda f: {
            "path": f["file"],
            "diff": '@@ -12,7 +12,9 @@\n-    ts = r["ts"]\n'
            '+    ts = r.get("ts")\n+    if ts is None:\n+        continue\n',
        },
        lambda f: "Applied patch to %s (+3 -1)" % f["file"],
    ),
    "run_shell": (
        lambda f: {"cmd": "git status --short"},
        lambda f: " M %s\n M tests/test_%s.py\n?? notes.md" % (f["file"], f["func"]),
    ),
}

STREETS = [
    "12 Harbour St, Portland",
    "88 Elm Ave, Austin",
    "5 Rue Cler, Paris",
    "221B Baker St, London",
    "1-2-3 Shibuya, Tokyo",
    "400 Main St, Denver",
]
PRODUCTS = [
    "Trail Runner 2 boots",
    "Alpine shell jacket",
    "merino base layer",
    "40L daypack",
    "down vest",
    "rain poncho",
]
NAMES = [
    "Maria Garcia",
    "Wei Zhang",
    "John Smith",
    "Aiko Tanaka",
    "Olu Adeyemi",
    "李娜",
    "Sven Larsen",
    "Priya Patel",
]
FILES = [
    "src/utils/dates.py",
    "src/net/client.py",
    "src/billing/invoice.py",
    "src/api/handlers.py",
    "src/core/cache.py",
    "src/cli/main.py",
    "src/db/models.py",
]
FUNCS = [
    "parse_dates",
    "fetch_json",
    "calculate_total",
    "merge_rows",
    "load_config",
    "render_report",
    "sync_accounts",
    "normalize_email",
]
TESTS = [
    "test_parse_dates",
    "test_retry_backoff",
    "test_total_with_tax",
    "test_merge_empty",
    "test_config_defaults",
    "test_unicode_names",
]
KB_TITLES = [
    "Returns and refunds",
    "Tracking a shipment",
    "Changing your address",
    "Billing and invoices",
    "Account security",
    "Size guide",
    "退款政策",
]


def _facts(rng: random.Random) -> dict[str, Any]:
    """Random values to fill one message template."""
    d = END - timedelta(days=rng.randint(0, 70))
    return {
        "order": "NW-%06d" % rng.randint(1, 999_999),
        "date": d.strftime("%Y-%m-%d"),
        "year": d.year - rng.randint(0, 2),
        "amount": "$%d.%02d" % (rng.randint(5, 400), rng.randint(0, 99)),
        "plan": rng.choice(["Basic", "Plus", "Team", "基础版"]),
        "email": "%s%d@example.com"
        % (rng.choice(["maria", "wei", "jsmith", "aiko", "olu"]), rng.randint(1, 999)),
        "street": rng.choice(STREETS),
        "product": rng.choice(PRODUCTS),
        "size": rng.choice(["S", "M", "L", "XL", "42", "44"]),
        "n": rng.randint(2, 40),
        "carrier": rng.choice(["UPS", "FedEx", "DHL", "顺丰"]),
        "ticket": "TCK-%05d" % rng.randint(1, 99_999),
        "status": rng.choice(["in_transit", "delivered", "label_created", "exception"]),
        "tracking": "1Z%016d" % rng.randint(0, 10**16 - 1),
        "sku": "SKU-%04d" % rng.randint(1, 9999),
        "cust": "cus_%08x" % rng.getrandbits(32),
        "name": rng.choice(NAMES),
        "tier": rng.choice(["standard", "gold", "vip"]),
        "hex8": "%08x" % rng.getrandbits(32),
        "query": rng.choice(
            ["refund damaged item", "late delivery", "change address", "double charge", "退货流程"]
        ),
        "kb": [(rng.choice(KB_TITLES), round(rng.uniform(0.3, 0.95), 3)) for _ in range(3)],
        "file": rng.choice(FILES),
        "func": rng.choice(FUNCS),
        "test": rng.choice(TESTS),
        "ms": rng.randint(40, 9000),
        "paths": rng.sample(FILES, 3),
    }


def _text_pool(rng: random.Random, role: str, templates: list[str], size: int):
    pool = []
    for _ in range(size):
        content = rng.choice(templates).format(**_facts(rng))
        pool.append((dumps({"role": role, "content": content}), "[%s] %s" % (role, content[:100])))
    return pool


def _tool_pools(rng: random.Random, tools: dict, call_texts: list[str], size: int):
    """Per tool name: assistant messages calling it, and tool messages answering."""
    calls: dict[str, list] = {}
    results: dict[str, list] = {}
    for name, (make_args, make_result) in tools.items():
        calls[name], results[name] = [], []
        for _ in range(size):
            f = _facts(rng)
            content = rng.choice(call_texts)
            msg = {
                "role": "assistant",
                "content": content,
                "tool_calls": [
                    {
                        "id": "@CALL@",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(make_args(f))},
                    }
                ],
            }
            calls[name].append((dumps(msg), "[assistant] " + content[:100]))
            out = make_result(f)
            msg = {"role": "tool", "tool_call_id": "@CALL@", "name": name, "content": out}
            results[name].append((dumps(msg), "[tool] " + out[:100]))
    return calls, results


class Pools:
    """Everything a row is assembled from, per thread kind ("support" / "coder")."""

    def __init__(self, rng: random.Random, size: int = 160):
        self.system = {
            "support": dumps({"role": "system", "content": SUPPORT_SYSTEM}),
            "coder": dumps({"role": "system", "content": CODER_SYSTEM}),
        }
        self.user = {
            ("support", "en"): _text_pool(rng, "user", SUPPORT_USER_EN, size),
            ("support", "zh"): _text_pool(rng, "user", SUPPORT_USER_ZH, size),
            ("coder", "en"): _text_pool(rng, "user", CODER_USER_EN, size),
            ("coder", "zh"): _text_pool(rng, "user", CODER_USER_ZH, size),
        }
        self.answer = {
            ("support", "en"): _text_pool(rng, "assistant", SUPPORT_ANSWER_EN, size),
            ("support", "zh"): _text_pool(rng, "assistant", SUPPORT_ANSWER_ZH, size),
            ("coder", "en"): _text_pool(rng, "assistant", CODER_ANSWER_EN, size),
            ("coder", "zh"): _text_pool(rng, "assistant", CODER_ANSWER_ZH, size),
        }
        self.calls, self.results = {}, {}
        self.calls["support"], self.results["support"] = _tool_pools(
            rng, SUPPORT_TOOLS, SUPPORT_CALL_TEXT, size // 2
        )
        self.calls["coder"], self.results["coder"] = _tool_pools(rng, CODER_TOOLS, CODER_CALL_TEXT, size // 2)
        self.tool_names = {k: sorted(v) for k, v in self.calls.items()}
        self.notes = [
            dumps(s)
            for s in (
                "customer prefers email",
                "verified identity via order number",
                "asked twice about ETA",
                "用户情绪较急",
                "tests flaky on py3.10",
                "prefers small commits",
                "needs Windows support",
                "waiting for carrier reply",
                "promised callback tomorrow",
                "already tried clearing cache",
                "重复扣款已核实",
                "do not touch generated files",
                "uses poetry, not pip",
                "refund > $100 needs approval",
            )
        ]


# ------------------------------------------------------------------------- plan


class Thread:
    __slots__ = (
        "name",
        "kind",
        "role",
        "lang",
        "times",
        "steps",
        "root_parent",
        "source",
        "fork_step",
        "extra",
    )

    def __init__(self, name: str, kind: str, role: int, lang: str):
        self.name, self.kind, self.role, self.lang = name, kind, role, lang
        self.times: list[int] = []  # created_at, µs since the epoch, increasing
        self.steps: list[int] = []  # step of each row (normally 1..n)
        self.root_parent: str | None = None  # parent_id of the first row, when not NULL
        self.source: int = -1  # branch: index of the source thread
        self.fork_step: int = 0  # branch: step of the source row it forks from
        self.extra: dict = {}


def _gaps(rng: random.Random, n: int, mean: float, pauses: bool = True) -> list[float]:
    """Offsets in seconds of n snapshots: agent steps, with the odd pause of hours/days."""
    t, out = 0.0, []
    expo, rnd = rng.expovariate, rng.random
    lam = 1.0 / mean
    for _ in range(n):
        out.append(t)
        t += 0.2 + expo(lam)
        if pauses and rnd() < 0.008:
            t += rng.uniform(1800, 2 * 86400)
    return out


def _place(rng: random.Random, offsets: list[float]) -> list[int]:
    """Put a thread's offsets somewhere inside the 60-day window."""
    span = SPAN_S
    total = offsets[-1] if offsets else 0.0
    if total > span * 0.97:  # compress very long threads into the window
        k = span * 0.97 / total
        offsets = [o * k for o in offsets]
        total = offsets[-1]
    start = rng.uniform(0, span - total)
    return [START_US + int((start + o) * 1e6) for o in offsets]


def _sizes(rng: random.Random, count: int, total: int, minimum: int = 2) -> list[int]:
    """count thread lengths summing to total: a skewed spread, some short, a few long."""
    w = [rng.lognormvariate(0, 0.9) for _ in range(count)]
    scale = (total - minimum * count) / sum(w)
    sizes = [minimum + int(x * scale) for x in w]
    diff = total - sum(sizes)
    while diff != 0:
        i = rng.randrange(count)
        if diff > 0:
            sizes[i] += 1
            diff -= 1
        elif sizes[i] > minimum:
            sizes[i] -= 1
            diff += 1
    return sizes


BRANCH_NAMES = [
    "bugfix-experiment",
    "retry-gpt4o",
    "alt-plan",
    "refund-path",
    "escalate",
    "what-if",
    "cheaper-model",
    "manual-fix",
    "rollback-test",
    "try-again",
    "human-review",
    "no-tools",
]


class Plan:
    def __init__(self, args: argparse.Namespace):
        rng = random.Random("plan-%d" % args.seed)
        self.threads: list[Thread] = []
        n_threads, n_rows = args.threads, args.checkpoints
        long_steps = min(args.long_steps, n_rows // 10)
        n_branch = max(1, round(n_threads * 0.05 / 1.05))
        n_special = 4  # long, big-state, dup steps, orphan
        n_regular = n_threads - n_branch - n_special
        if n_regular < 5:
            raise UsageError("--threads must be at least %d" % (n_branch + n_special + 5))
        # Branch threads: most are one row (step 0); about one in ten goes on for a while,
        # and a quarter of those are merged back into their source thread.
        cont = [rng.randint(2, 25) if rng.random() < 0.1 else 0 for _ in range(n_branch)]
        cont[0] = max(cont[0], 8)  # at least one branch with several steps
        merges = [bool(c) and (i == 0 or rng.random() < 0.25) for i, c in enumerate(cont)]
        dup_a, dup_b, orphan_n, orphan_first = 30, 12, 25, 41
        fixed = long_steps + 2 + dup_a + dup_b + orphan_n + n_branch + sum(cont) + sum(merges)
        regular_rows = n_rows - fixed
        if regular_rows < 4 * n_regular:
            raise UsageError(
                "--checkpoints too small for %d threads (need about %d)" % (n_threads, fixed + 4 * n_regular)
            )

        def new(kind: str, role: int = REGULAR, name: str | None = None) -> Thread:
            idx = len(self.threads) + 1
            lang = "zh" if rng.random() < 0.2 else "en"
            t = Thread(name or "%s-%06d" % (kind, idx), kind, role, lang)
            self.threads.append(t)
            return t

        def fill(t: Thread, n: int, mean: float, first_step: int = 1) -> None:
            t.times = _place(rng, _gaps(rng, n, mean))
            t.steps = list(range(first_step, first_step + n))

        for n in _sizes(rng, n_regular, regular_rows):
            fill(new(rng.choice(("support", "support", "coder"))), n, rng.uniform(4, 120))

        # The long thread: 10,000 steps over most of the window.
        long_t = new("coder", name="long-thread")
        fill(long_t, long_steps, SPAN_S * 0.9 / max(long_steps, 1))
        # Two ~5 MB states, consecutive, half a minute apart.
        big = new("support", BIG, name="big-state")
        big.times = _place(rng, [0.0, 31.4])
        big.steps = [1, 2]
        # The engine's step counter lives in memory: after a restart it counts from 1 again.
        dup = new("support")
        first = _gaps(rng, dup_a, 40)
        pause = first[-1] + rng.uniform(3 * 3600, 86400)
        dup.times = _place(rng, first + [pause + o for o in _gaps(rng, dup_b, 40)])
        dup.steps = list(range(1, dup_a + 1)) + list(range(1, dup_b + 1))
        self.dup_thread = dup.name
        # GC (keep_last_n) deleted steps 1..40: the first surviving row's parent is gone.
        orphan = new("coder")
        fill(orphan, orphan_n, 50, first_step=orphan_first)
        orphan.root_parent = "ckpt-%s-%d-%06x" % (orphan.name, orphan_first - 1, rng.getrandbits(24))

        # Branches fork from the middle of a regular thread, some time after that row.
        candidates = [i for i in range(n_regular) if len(self.threads[i].steps) >= 6]
        sources = rng.sample(candidates, min(n_branch, len(candidates)))
        # The showcase branch (the continuing one, index 0) gets a mid-sized source.
        sources.sort(key=lambda i: abs(len(self.threads[i].steps) - 100))
        self.branch_ids: list[int] = []
        self.merges: dict[tuple[int, int], int] = {}  # (thread, step) -> branch merged
        end_us = START_US + SPAN_S * 1_000_000
        used_names: set[str] = set()
        for b, src_i in enumerate(sources):
            src = self.threads[src_i]
            n = len(src.steps)
            pos = rng.randint(n // 4, (3 * n) // 4)
            bname = rng.choice(BRANCH_NAMES)
            name = "%s-branch-%s-%04x" % (src.name, bname, rng.getrandbits(16))
            while name in used_names:
                name = "%s-branch-%s-%04x" % (src.name, bname, rng.getrandbits(16))
            used_names.add(name)
            br = new(src.kind, BRANCH, name=name)
            br.lang = src.lang
            br.source, br.fork_step = src_i, src.steps[pos]
            br.extra["branch_name"] = bname
            # Forked some seconds to days later, but still inside the window.
            room = (end_us - src.times[pos]) / 1e6 - 3600
            t0 = src.times[pos] + int(rng.uniform(20, max(20.0, min(3 * 86400, room))) * 1e6)
            offs = _gaps(rng, 1 + cont[b], rng.uniform(5, 60), pauses=False)
            br.times = [t0 + int(o * 1e6) for o in offs]
            br.steps = list(range(0, 1 + cont[b]))
            self.branch_ids.append(len(self.threads) - 1)
            if merges[b]:
                t_m = max(br.times[-1], src.times[-1]) + int(rng.uniform(60, 7200) * 1e6)
                src.times.append(t_m)
                src.steps.append(src.steps[-1] + 1)
                self.merges[(src_i, src.steps[-1])] = len(self.threads) - 1
        self.showcase_branch = self.branch_ids[0]
        self.long_thread = long_t.name

    def events(self) -> list[tuple[int, int, int]]:
        """(created_at µs, thread index, row index in thread), in the order a writer would
        have inserted them."""
        ev = [(us, ti, k) for ti, t in enumerate(self.threads) for k, us in enumerate(t.times)]
        ev.sort()
        return ev


# ----------------------------------------------------------------------- rows


class Ctx:
    """Per-thread state of the simulated agent while its rows are generated."""

    __slots__ = (
        "conv",
        "summary",
        "slot",
        "tool",
        "call",
        "llm",
        "tools",
        "tok_in",
        "tok_out",
        "retries",
        "hist",
        "notes",
        "extras",
        "const",
        "last_id",
        "sent",
        "flags",
    )

    def copy(self) -> Ctx:
        c = Ctx()
        for k in Ctx.__slots__:
            v = getattr(self, k)
            setattr(c, k, list(v) if isinstance(v, list) else v)
        return c


NODES_AFTER = {1: "agent", 2: "tools", 3: "agent", 4: "__end__"}
STATUS = {1: "thinking", 2: "calling_tool", 3: "reading_tool_result", 4: "awaiting_user"}


class RowFactory:
    """Turns the plan's events into table rows (tuples in COLUMNS order)."""

    def __init__(self, plan: Plan, seed: int, big_mb: float, pg: bool):
        self.plan = plan
        self.rng = random.Random("rows-%d" % seed)
        self.pools = Pools(self.rng)
        self.pg = pg
        self.big_mb = big_mb
        self.ctx: list[Ctx | None] = [None] * len(plan.threads)
        self.captured: dict[int, tuple] = {}  # branch index -> (source row, ctx copy)
        self.fork_points: dict[tuple[int, int], list[int]] = {}
        for bi in plan.branch_ids:
            b = plan.threads[bi]
            self.fork_points.setdefault((b.source, b.fork_step), []).append(bi)
        self.meta: dict[str, Any] = {}
        self.rows = 0
        self._big: tuple | None = None
        showcase = plan.threads[plan.showcase_branch]
        self._sample_src, self._sample_fork = showcase.source, showcase.fork_step

    # -- per-thread constants -------------------------------------------------
    def _new_ctx(self, t: Thread) -> Ctx:
        rng = self.rng
        c = Ctx()
        c.conv = [self.pools.system[t.kind]]
        c.summary = ""
        c.slot = 4  # "waiting for the user": the first row is a user turn
        c.tool = ""
        c.call = ""
        c.llm = c.tools = c.tok_in = c.tok_out = c.retries = 0
        c.hist = []
        c.notes = []
        c.last_id = None
        c.sent = rng.uniform(-0.6, 0.8)
        c.flags = [rng.random() < 0.1, rng.random() < 0.2]
        f = _facts(rng)
        conv_id = "conv_%08x" % rng.getrandbits(32)
        if t.kind == "support":
            const = [
                '"conversation_id": "%s"' % conv_id,
                '"agent": "support-bot"',
                '"customer": '
                + dumps({"id": f["cust"], "name": f["name"], "email": f["email"], "tier": f["tier"]}),
                '"ticket": '
                + dumps(
                    {
                        "id": f["ticket"],
                        "priority": rng.choice(["low", "normal", "high"]),
                        "category": rng.choice(["shipping", "billing", "returns", "account"]),
                    }
                ),
            ]
            extras = [
                '"order": '
                + dumps(
                    {
                        "id": f["order"],
                        "status": f["status"],
                        "carrier": f["carrier"],
                        "tracking": f["tracking"],
                        "items": [{"sku": f["sku"], "name": f["product"], "qty": rng.randint(1, 3)}],
                    }
                ),
                '"kb_hits": '
                + dumps(
                    [{"id": "kb-%d" % rng.randint(1, 500), "title": ti, "score": sc} for ti, sc in f["kb"]]
                ),
                '"refund_quote": '
                + dumps(
                    {
                        "amount": f["amount"],
                        "currency": "USD",
                        "approved": rng.random() < 0.5,
                        "approver": None,
                    }
                ),
                '"shipping": '
                + dumps(
                    {
                        "address": f["street"],
                        "method": rng.choice(["ground", "express", "pickup"]),
                        "insured": rng.random() < 0.3,
                    }
                ),
                '"policy_checks": '
                + dumps(
                    {"within_30_days": True, "final_sale": False, "fraud_score": round(rng.random() / 5, 4)}
                ),
                '"memory": '
                + dumps(
                    {
                        "summary": "Customer %s contacted us about %s; %s."
                        % (
                            f["name"],
                            f["query"],
                            rng.choice(["resolved", "pending carrier", "escalated", "待跟进"]),
                        ),
                        "turns": rng.randint(2, 30),
                    }
                ),
                '"macros_used": '
                + dumps(
                    rng.sample(
                        ["greeting", "apology", "refund_ok", "tracking_info", "closing", "escalation"], 3
                    )
                ),
                '"survey": ' + dumps({"sent": False, "channel": "email", "scheduled_for": None}),
            ]
        else:
            const = [
                '"conversation_id": "%s"' % conv_id,
                '"agent": "coder"',
                '"repo": '
                + dumps(
                    {
                        "url": "git@example.com:acme/%s.git"
                        % rng.choice(["billing", "webapp", "etl", "mobile-api"]),
                        "branch": "fix/%s" % f["func"],
                        "head": "%012x" % rng.getrandbits(48),
                    }
                ),
                '"task": ' + dumps(rng.choice(CODER_USER_EN).format(**f)[:60]),
            ]
            extras = [
                '"open_files": ' + dumps(rng.sample(FILES, 4)),
                '"plan": '
                + dumps(
                    [
                        {"step": i + 1, "what": w, "done": rng.random() < 0.5}
                        for i, w in enumerate(
                            ["reproduce", "locate root cause", "patch", "add test", "run suite"]
                        )
                    ]
                ),
                '"test_results": '
                + dumps(
                    {
                        "passed": f["n"] * 3,
                        "failed": rng.randint(0, 3),
                        "skipped": rng.randint(0, 5),
                        "duration_s": round(f["ms"] / 100, 2),
                    }
                ),
                '"diff_stats": '
                + dumps(
                    {
                        "files": rng.randint(1, 6),
                        "insertions": rng.randint(1, 200),
                        "deletions": rng.randint(0, 80),
                    }
                ),
                '"env": '
                + dumps(
                    {"python": "3.11.7", "os": rng.choice(["linux", "darwin", "windows"]), "venv": ".venv"}
                ),
                '"lint": ' + dumps({"ruff": rng.randint(0, 12), "mypy": rng.randint(0, 7)}),
                '"todo": ' + dumps(["update CHANGELOG", "ask about %s" % f["func"], "清理临时文件"]),
                '"deps": ' + dumps({"requests": "2.32.3", "pydantic": "2.8.2", "sqlalchemy": "2.0.31"}),
            ]
        c.const = ", ".join(const)
        c.extras = extras
        return c

    # -- one agent step -------------------------------------------------------
    def _advance(self, t: Thread, c: Ctx) -> tuple[str, str]:
        """Append the next message of the conversation; return (tags JSON, next_node)."""
        rnd = self.rng.random
        pools = self.pools
        slot = c.slot
        if slot == 4:  # the user speaks
            lst = pools.user[(t.kind, t.lang)]
            msg, c.summary = lst[int(rnd() * len(lst))]
            c.slot = 1
            tag = "task_boundary" if len(c.conv) == 1 else "state_change"
            c.tok_in += 40 + int(rnd() * 200)
        elif slot == 2:  # the tool answers
            lst = pools.results[t.kind][c.tool]
            msg, c.summary = lst[int(rnd() * len(lst))]
            msg = msg.replace("@CALL@", c.call)
            c.tools += 1
            c.slot = 3
            tag = "tool_call"
        else:  # the model answers or calls
            c.llm += 1
            c.tok_in += 300 + int(rnd() * 2500)
            c.tok_out += 20 + int(rnd() * 400)
            if rnd() < (0.7 if slot == 1 else 0.4):
                names = pools.tool_names[t.kind]
                c.tool = names[int(rnd() * len(names))]
                c.call = "call_%024x" % self.rng.getrandbits(96)
                lst = pools.calls[t.kind][c.tool]
                msg, c.summary = lst[int(rnd() * len(lst))]
                msg = msg.replace("@CALL@", c.call)
                c.slot = 2
            else:
                lst = pools.answer[(t.kind, t.lang)]
                msg, c.summary = lst[int(rnd() * len(lst))]
                c.slot = 4
            tag = "llm_call"
            if rnd() < 0.02:
                c.retries += 1
        r = rnd()
        if r < 0.01:
            tag = "interval"
        elif r < 0.015:
            tag = "manual"
        conv = c.conv
        conv.append(msg)
        if len(conv) > 12:
            del conv[:6]
        node = NODES_AFTER[c.slot]
        hist = c.hist
        hist.append(node)
        if len(hist) > 4:
            del hist[0]
        if rnd() < 0.03:
            notes = self.pools.notes
            c.notes.append(notes[int(rnd() * len(notes))])
            if len(c.notes) > 4:
                del c.notes[0]
        return TAG_JSON[tag], node

    def _blobs(self, t: Thread, c: Ctx, step: int) -> tuple[str, str, str]:
        rnd = self.rng.random
        conv = c.conv
        r = rnd()
        k = 2 + int(r * r * r * 5)  # 2..6 most recent messages, mostly 2-3
        messages = "[" + ", ".join(conv[-k:]) + "]"
        c.sent = max(-1.0, min(1.0, c.sent + (rnd() - 0.5) * 0.1))
        n_extra = min(len(c.extras), step // 120)
        state = (
            '{%s, "step": %d, "status": "%s", "counters": {"llm_calls": %d, "tool_calls": %d, '
            '"tokens_in": %d, "tokens_out": %d, "retries": %d}, "last_tool": %s, '
            '"history": [%s], "flags": {"escalated": %s, "needs_human": %s}, '
            '"sentiment": %.3f, "language": "%s", "notes": [%s]%s%s}'
            % (
                c.const,
                step,
                STATUS[c.slot],
                c.llm,
                c.tools,
                c.tok_in,
                c.tok_out,
                c.retries,
                ('"%s"' % c.tool) if c.tool else "null",
                ", ".join('"%s"' % h for h in c.hist),
                "true" if c.flags[0] else "false",
                "true" if c.flags[1] else "false",
                c.sent,
                t.lang,
                ", ".join(c.notes),
                ", " if n_extra else "",
                ", ".join(c.extras[:n_extra]),
            )
        )
        if c.slot == 3:
            tools = (
                '{"last_call": {"name": "%s", "id": "%s", "status": "%s", '
                '"latency_ms": %d}, "calls_total": %d}'
                % (c.tool, c.call, "ok" if rnd() < 0.93 else "error", 20 + int(rnd() * 1500), c.tools)
            )
        elif c.tools:
            tools = '{"calls_total": %d, "last_tool": "%s"}' % (c.tools, c.tool)
        else:
            tools = "{}"
        return messages, state, tools

    # -- the ~5 MB states -----------------------------------------------------
    def _big_states(self) -> tuple[str, str, list[str]]:
        rng = random.Random("big-%d" % self.rng.getrandbits(32))
        target = int(self.big_mb * 1024 * 1024)
        words = (
            "order refund shipping invoice customer agent tool result cache token "
            "embedding retrieval context window summary plan step 检索 上下文 摘要"
        ).split()
        docs = []
        size = 0
        i = 0
        while size < target:
            text = " ".join(rng.choice(words) for _ in range(60))
            doc = {
                "id": "doc-%05d" % i,
                "title": "Document %d: %s" % (i, rng.choice(KB_TITLES)),
                "text": text,
                "embedding": [round(rng.uniform(-1, 1), 6) for _ in range(24)],
                "meta": {
                    "source": rng.choice(["kb", "email", "chat", "pdf"]),
                    "score": round(rng.random(), 4),
                    "tokens": rng.randint(50, 900),
                    "tags": rng.sample(words, 3),
                },
            }
            docs.append(doc)
            size += len(json.dumps(doc, ensure_ascii=False).encode()) + 2
            i += 1
        a = {
            "conversation_id": "conv_big",
            "agent": "research-bot",
            "step": 1,
            "status": "retrieving",
            "retrieval": {"query": "all refund cases in Q2", "top_k": len(docs), "documents": docs},
            "counters": {"llm_calls": 12, "tool_calls": 30, "tokens_in": 981_223, "tokens_out": 40_112},
        }
        b = json.loads(json.dumps(a))
        n = len(docs)
        changes = []
        b["step"] = 2
        changes.append("step")
        b["status"] = "summarising"
        changes.append("status")
        j = n // 3
        b["retrieval"]["documents"][j]["meta"]["score"] = 0.9999
        changes.append("retrieval.documents[%d].meta.score" % j)
        j = (2 * n) // 3
        b["retrieval"]["documents"][j]["title"] += " (revised)"
        changes.append("retrieval.documents[%d].title" % j)
        b["retrieval"]["documents"][n - 1]["embedding"][5] = 0.0
        changes.append("retrieval.documents[%d].embedding[5]" % (n - 1))
        b["counters"]["llm_calls"] = 13
        changes.append("counters.llm_calls")
        b["retrieval"]["documents"][7]["meta"]["reviewed"] = True
        changes.append("retrieval.documents[7].meta.reviewed (added)")
        return dumps(a), dumps(b), changes

    # -- the stream -----------------------------------------------------------
    def rows_iter(self) -> Iterator[tuple]:
        plan = self.plan
        threads = plan.threads
        ctxs = self.ctx
        getbits = self.rng.getrandbits
        pg = self.pg
        td = timedelta
        merges = plan.merges
        fork_points = self.fork_points
        dup_ids: set[str] = set()
        for us, ti, k in plan.events():
            t = threads[ti]
            step = t.steps[k]
            created = EPOCH + td(microseconds=us)
            if not pg:
                created = created.isoformat()
            c = ctxs[ti]
            if t.role == BRANCH and k == 0:
                # The writer's branch(): a copy of the source checkpoint, id "ckpt-{thread}-0".
                src_row, src_ctx = self.captured[ti]
                cid = "ckpt-%s-0" % t.name
                bname = t.extra["branch_name"]
                row = (
                    t.name,
                    cid,
                    src_row[1],
                    0,
                    created,
                    json.dumps(["branch", bname]),
                    "Branch '%s' from %s" % (bname, src_row[1]),
                    src_row[7],
                    src_row[8],
                    src_row[9],
                    src_row[10],
                )
                c = ctxs[ti] = src_ctx
                c.last_id = cid
                self.rows += 1
                yield row
                continue
            if c is None:
                c = ctxs[ti] = self._new_ctx(t)
            if t.role == BIG:
                if k == 0:
                    self._big = self._big_states()
                tags, node = self._advance(t, c)
                messages, _, tools = self._blobs(t, c, step)
                state = self._big[k]
            else:
                tags, node = self._advance(t, c)
                messages, state, tools = self._blobs(t, c, step)
            cid = "ckpt-%s-%d-%06x" % (t.name, step, getbits(24))
            if t.name == plan.dup_thread:
                while cid in dup_ids:
                    cid = "ckpt-%s-%d-%06x" % (t.name, step, getbits(24))
                dup_ids.add(cid)
            parent = c.last_id if k else t.root_parent
            merged = merges.get((ti, step)) if merges else None
            if merged is not None:
                parent = ctxs[merged].last_id  # merge_branch(): manual, from branch
                tags = TAG_JSON["manual"]
                self.meta.setdefault("merge_checkpoint", cid)
            row = (t.name, cid, parent, step, created, tags, c.summary, messages, state, tools, node)
            c.last_id = cid
            fps = fork_points.get((ti, step))
            if fps and t.name != plan.dup_thread:
                for bi in fps:
                    self.captured[bi] = (row, c.copy())
            self._note(ti, t, k, row)
            self.rows += 1
            yield row

    def _note(self, ti: int, t: Thread, k: int, row: tuple) -> None:
        """Remember the ids the benchmark JSON names."""
        plan = self.plan
        if t.role == BIG:
            self.meta["big_a" if k == 0 else "big_b"] = row[1]
            if k == 1:
                self.meta["big_changed_paths"] = self._big[2]
                self._big = None
        elif t.name == plan.dup_thread:
            self.meta["dup_steps_thread"] = t.name
        elif t.root_parent and k == 0:
            self.meta["orphan_checkpoint"] = row[1]
            self.meta["missing_parent_id"] = t.root_parent
        if ti == self._sample_src:
            if row[3] == self._sample_fork:
                self.meta["branch_parent"] = row[1]
            if k == len(t.steps) // 2:
                self.meta["sample_checkpoint"] = row[1]


# ---------------------------------------------------------------------- backends


def _batches(rows: Iterator[tuple], size: int) -> Iterator[list[tuple]]:
    batch: list[tuple] = []
    for r in rows:
        batch.append(r)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class Phases:
    """Per-phase wall times, printed to stderr with --verbose."""

    def __init__(self, verbose: bool):
        self.verbose = verbose
        self.t0 = self.last = time.perf_counter()

    def __call__(self, what: str) -> None:
        now = time.perf_counter()
        if self.verbose:
            print(
                "make_db: %-28s %7.1f s  (total %.1f s)" % (what, now - self.last, now - self.t0),
                file=sys.stderr,
            )
        self.last = now


def write_sqlite(
    path: str, make_factory: Callable[[], RowFactory], replace: bool, phase: Phases
) -> tuple[RowFactory, int]:
    if os.path.exists(path) and not replace:
        raise UsageError("%s exists; pass --replace to overwrite it" % path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)  # e.g. bench/data/
    factory = make_factory()
    phase("plan")
    # Build beside the target and rename at the end: an interrupted run leaves no
    # half-written file under the real name.
    tmp = path + ".building"
    for p in (tmp, tmp + "-journal"):
        if os.path.exists(p):
            os.remove(p)
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        # Our own brand-new file: no journal, no fsync while building. A big page cache keeps
        # the UNIQUE(checkpoint_id) index in memory while rows arrive in time order.
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-1000000")
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.execute(SQLITE_TABLE_DDL)
        sql = "INSERT INTO checkpoints (%s) VALUES (%s)" % (", ".join(COLUMNS), ", ".join("?" * len(COLUMNS)))
        conn.execute("BEGIN")
        for batch in _batches(factory.rows_iter(), 5000):
            conn.executemany(sql, batch)
        conn.execute("COMMIT")
        phase("generate + insert")
        for ddl in SQLITE_INDEX_DDL:  # after the load: one sort per index
            conn.execute(ddl)
        phase("create indexes")
        # Leave it as a writer's file would be: rollback journal, no sqlite_stat1 (no ANALYZE).
        mode = conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
        if mode.lower() != "delete":
            raise RuntimeError("could not set journal_mode=DELETE (got %s)" % mode)
    finally:
        conn.close()
    for p in (path, path + "-journal", path + "-wal", path + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    os.replace(tmp, path)
    return factory, os.path.getsize(path)


async def _write_postgres(
    dsn: str, make_factory: Callable[[], RowFactory], replace: bool, method: str, phase: Phases
) -> tuple[RowFactory, int]:
    import asyncpg  # only this backend needs it

    try:
        conn = await asyncpg.connect(dsn)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
        raise TargetError("cannot connect to %s: %s" % (dsn, e)) from e
    try:
        exists = await conn.fetchval("SELECT to_regclass('checkpoints') IS NOT NULL")
        if exists and not replace and await conn.fetchval("SELECT EXISTS (SELECT 1 FROM checkpoints)"):
            raise UsageError("table checkpoints is not empty; pass --replace to drop and recreate it")
        factory = make_factory()
        phase("plan")
        await conn.execute("SET maintenance_work_mem = '512MB'")
        # One transaction: a failed or interrupted load leaves the database as it was.
        async with conn.transaction():
            if exists and replace:
                await conn.execute("DROP TABLE checkpoints")
            await conn.execute(PG_TABLE_DDL)
            rows = factory.rows_iter()
            if method == "direct":
                # Binary COPY straight into the JSONB columns: asyncpg's jsonb encoder sends a
                # str as jsonb text, and the server parses it while we generate the next rows.
                await conn.copy_records_to_table("checkpoints", records=rows, columns=list(COLUMNS))
                phase("generate + COPY")
            else:
                await conn.execute(
                    "CREATE TEMP TABLE checkpoints_stage (thread_id text, checkpoint_id text, "
                    "parent_id text, step integer, created_at timestamptz, tags text, "
                    "summary text, messages_blob text, state_blob text, tools_blob text, "
                    "next_node text) ON COMMIT DROP"
                )
                await conn.copy_records_to_table("checkpoints_stage", records=rows, columns=list(COLUMNS))
                phase("generate + COPY (staging)")
                await conn.execute(
                    "INSERT INTO checkpoints (%s) SELECT thread_id, checkpoint_id, parent_id, "
                    "step, created_at, tags::jsonb, summary, messages_blob::jsonb, "
                    "state_blob::jsonb, tools_blob::jsonb, next_node FROM checkpoints_stage "
                    "ORDER BY created_at" % ", ".join(COLUMNS)
                )
                phase("INSERT ... SELECT casts")
            for ddl in PG_INDEX_DDL:
                await conn.execute(ddl)
            phase("create indexes")
        phase("commit")
        await conn.execute("ANALYZE checkpoints")
        phase("analyze")
        return factory, await conn.fetchval("SELECT pg_total_relation_size('checkpoints')")
    finally:
        await conn.close()


def write_postgres(
    dsn: str, make_factory: Callable[[], RowFactory], replace: bool, method: str, phase: Phases
) -> tuple[RowFactory, int]:
    return asyncio.run(_write_postgres(dsn, make_factory, replace, method, phase))


# -------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="make_db.py", description="Generate a large AgentOS-format checkpoint database for benchmarks."
    )
    p.add_argument("backend", choices=("sqlite", "postgres"))
    p.add_argument("target", help="SQLite file path, or Postgres DSN")
    p.add_argument("--threads", type=int, default=10_000, help="threads in total (default 10000)")
    p.add_argument("--checkpoints", type=int, default=1_000_000, help="rows in total (default 1000000)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument(
        "--replace",
        action="store_true",
        help="overwrite an existing file / drop and recreate a non-empty table",
    )
    p.add_argument(
        "--meta", help="also write the ids JSON to this file (SQLite always writes PATH.meta.json)"
    )
    p.add_argument(
        "--long-steps",
        type=int,
        default=10_000,
        help="steps of `long-thread` (default 10000; capped at checkpoints/10)",
    )
    p.add_argument(
        "--big-mb", type=float, default=5.0, help="size of each big-state state_blob in MB (default 5)"
    )
    p.add_argument(
        "--pg-method",
        choices=("direct", "staging"),
        default="direct",
        help="Postgres load path: binary COPY into the JSONB table (default), or "
        "COPY into a text staging table then INSERT ... SELECT with casts",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="print per-phase timings")
    args = p.parse_args(argv)
    if args.threads < 1 or args.checkpoints < 1:
        p.error("--threads and --checkpoints must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    phase = Phases(args.verbose)
    if args.meta:  # made before the load: a missing folder must not fail it at the end
        os.makedirs(os.path.dirname(os.path.abspath(args.meta)), exist_ok=True)

    def make_factory() -> RowFactory:
        return RowFactory(Plan(args), args.seed, args.big_mb, pg=args.backend == "postgres")

    try:
        if args.backend == "sqlite":
            factory, size = write_sqlite(args.target, make_factory, args.replace, phase)
        else:
            factory, size = write_postgres(args.target, make_factory, args.replace, args.pg_method, phase)
    except UsageError as e:
        print("make_db: error: %s" % e, file=sys.stderr)
        return 2
    except TargetError as e:
        print("make_db: error: %s" % e, file=sys.stderr)
        return 1
    seconds = time.perf_counter() - t0
    plan = factory.plan
    showcase = plan.threads[plan.showcase_branch]
    meta = {
        "long_thread": plan.long_thread,
        "big_a": factory.meta["big_a"],
        "big_b": factory.meta["big_b"],
        "sample_thread": plan.threads[showcase.source].name,
        "sample_checkpoint": factory.meta["sample_checkpoint"],
        "branch_thread": showcase.name,
        "rows": factory.rows,
        "threads": len(plan.threads),
        "branch_parent": factory.meta["branch_parent"],
        "branch_threads": len(plan.branch_ids),
        "merge_checkpoint": factory.meta.get("merge_checkpoint"),
        "dup_steps_thread": factory.meta["dup_steps_thread"],
        "orphan_checkpoint": factory.meta["orphan_checkpoint"],
        "missing_parent_id": factory.meta["missing_parent_id"],
        "big_changed_paths": factory.meta["big_changed_paths"],
        "seed": args.seed,
    }
    text = json.dumps(meta, indent=2, ensure_ascii=False) + "\n"
    meta_paths = [args.target + ".meta.json"] if args.backend == "sqlite" else []
    if args.meta:
        meta_paths.append(args.meta)
    for mp in meta_paths:
        with open(mp, "w", encoding="utf-8") as fh:
            fh.write(text)
    sys.stdout.write(text)
    print(
        "make_db: %s rows=%d threads=%d bytes=%d seconds=%.1f"
        % (args.backend, factory.rows, len(plan.threads), size, seconds),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
