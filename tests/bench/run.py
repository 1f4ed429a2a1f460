"""`make bench`: what the system costs and what batching saves, measured in one run so
that ratios hold on a noisy machine. Prints a table and writes docs/benchmarks.md with a
plot (docs/benchmarks.png).

1. Webhook: AWS calls per message, handler time per message, cold import time.
2. Per batch: state transitions and Lambda invocations (happy path, one retry, per
   quiet-mode extension), and the Step Functions cost they imply at list prices.
3. Batching on a seeded corpus of synthetic typing traces: AI calls per burst, bursts
   split, reply delay after the last fragment, for no batching, fixed windows and quiet
   mode (the production rule code, debounce.py, replayed on the traces).
4. Load: messages per second through the local gateway, 50 concurrent conversations.
"""

from __future__ import annotations

import logging
import os
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")

import botocore.client  # noqa: E402
from werkzeug.test import EnvironBuilder  # noqa: E402
from werkzeug.wrappers import Request  # noqa: E402

from functions.config import get_settings  # noqa: E402
from functions.dal import conversations as conversation_records  # noqa: E402
from functions.dal import staged_messages  # noqa: E402
from functions.logic import clock  # noqa: E402
from functions.logic.debounce import BatchingRules, due_ms  # noqa: E402
from functions.models import Channel  # noqa: E402
from infra.local.gateway import proxy_event  # noqa: E402
from infra.local.lambdas import invoke  # noqa: E402
from infra.local.stack import LocalConfig, LocalStack  # noqa: E402
from infra.local.webhooks import inbound_form, new_message_sid, post_webhook, sign  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUR_NUMBER = "whatsapp:+15550009999"
ACCOUNT = LocalConfig.twilio_account_sid  # the local stack's default tenant, which owns OUR_NUMBER
SEED = 20261125

# List prices, us-east-1 (2026): Step Functions Standard per state transition; Lambda
# per request. Lambda duration and DynamoDB on-demand requests come on top.
PRICE_TRANSITION = 0.025 / 1000
PRICE_LAMBDA_REQUEST = 0.20 / 1_000_000
SEEDS_MONTHLY_AT_100K_PER_DAY = "$17-27 (Redis buffer design, seed 004)"


# --- 1. the webhook ---------------------------------------------------------------------


class AwsCallCounter:
    """Counts AWS API calls made by the current thread while counting is on."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.calls: Counter[str] = Counter()
        original = botocore.client.BaseClient._make_api_call
        counter = self

        def counted(client: Any, operation: str, params: dict[str, Any]) -> Any:
            if getattr(counter.local, "on", False):
                counter.calls[f"{client.meta.service_model.service_name}:{operation}"] += 1
            return original(client, operation, params)

        botocore.client.BaseClient._make_api_call = counted  # type: ignore[method-assign]

    def measure(self, call: Any) -> tuple[Any, Counter[str]]:
        self.calls = Counter()
        self.local.on = True
        try:
            return call(), self.calls
        finally:
            self.local.on = False


def webhook_event(stack: LocalStack, user: str, body: str) -> dict[str, Any]:
    """A signed API Gateway proxy event for one inbound message (no HTTP involved)."""
    url = f"{get_settings().webhook_base_url}/whatsapp"  # the URL signatures cover
    form = inbound_form(body, user, OUR_NUMBER, stack.config.twilio_account_sid, new_message_sid())
    builder = EnvironBuilder(
        path="/whatsapp",
        base_url="http://bench.local",
        method="POST",
        data=form,
        headers={"X-Twilio-Signature": sign(url, form, stack.config.twilio_auth_token)},
    )
    return proxy_event(Request(builder.get_environ()))


def measure_webhook(
    stack: LocalStack, counter: AwsCallCounter, conversations: int, per_conversation: int
) -> dict:
    """Handler time and AWS calls per message; the first message of each conversation
    opens its window, the others land in the open window (a long window keeps it open)."""
    os.environ["BATCH_WINDOW_SECONDS"] = "900"
    get_settings.cache_clear()
    users = [f"whatsapp:+1444{i:07d}" for i in range(conversations)]
    for user in users:
        conversation_records.create(Channel.WHATSAPP, user, OUR_NUMBER, clock.iso(clock.now()), ACCOUNT)
    invoke("Webhook", webhook_event(stack, "whatsapp:+14449999999", "warm-up"))  # caches, imports
    times: dict[str, list[float]] = {"first": [], "later": []}
    calls: dict[str, Counter[str]] = {"first": Counter(), "later": Counter()}
    for round_number in range(per_conversation):
        kind = "first" if round_number == 0 else "later"
        for user in users:
            event = webhook_event(stack, user, f"fragment {round_number}")
            started = time.perf_counter()
            (result, _), made = counter.measure(lambda e=event: invoke("Webhook", e))
            times[kind].append((time.perf_counter() - started) * 1000)
            assert result["statusCode"] == 200, result
            calls[kind].update(made)
    os.environ["BATCH_WINDOW_SECONDS"] = "1"
    get_settings.cache_clear()
    everything = times["first"] + times["later"]
    return {
        "messages": len(everything),
        "calls_first": sum(calls["first"].values()) / len(times["first"]),
        "calls_later": sum(calls["later"].values()) / len(times["later"]),
        "calls_first_detail": dict(calls["first"]),
        "calls_later_detail": dict(calls["later"]),
        "median_ms": statistics.median(everything),
        "p99_ms": statistics.quantiles(everything, n=100)[98],
        "median_first_ms": statistics.median(times["first"]),
        "median_later_ms": statistics.median(times["later"]),
    }


def measure_imports(repeat: int = 5) -> dict:
    def cold(module: str) -> float:
        code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
        runs = [float(subprocess.check_output([sys.executable, "-c", code], cwd=ROOT)) for _ in range(repeat)]
        return statistics.median(runs) * 1000

    return {"webhook_ms": cold("functions.handlers.webhook"), "boto3_ms": cold("boto3")}


# --- 2. per batch -------------------------------------------------------------------------


def run_counts(stack: LocalStack, conversation_id: str) -> tuple[int, int, int]:
    """(billed state transitions, Lambda invocations, window checks) of the conversation's
    runs. Step Functions bills each state entered and each retry of a task."""
    sfn = stack.client("stepfunctions")
    transitions = invocations = checks = 0
    for run in sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"]:
        if not run["name"].startswith(conversation_id + "-"):
            continue
        events = sfn.get_execution_history(executionArn=run["executionArn"], maxResults=1000)["events"]
        entered = sum(1 for e in events if e["type"].endswith("StateEntered"))
        task_entries = sum(1 for e in events if e["type"] == "TaskStateEntered")
        scheduled = sum(1 for e in events if e["type"] == "TaskScheduled")
        transitions += entered + (scheduled - task_entries)  # retries
        invocations += sum(
            1
            for e in events
            if e["type"] == "TaskScheduled" and e["taskScheduledEventDetails"]["resourceType"] == "lambda"
        )
        checks += sum(
            1
            for e in events
            if e["type"] == "TaskStateEntered"
            and e["stateEnteredEventDetails"]["name"] == "Check Batch Window"
        )
    return transitions, invocations, checks


def batch_run(
    stack: LocalStack, rules: dict | None, fragments: list[tuple[float, str]]
) -> tuple[int, int, int]:
    """Send `fragments` (offset, body) for a new conversation with `rules`; its counts."""
    user = f"whatsapp:+1333{random.randrange(10**7):07d}"
    conversation = conversation_records.create(
        Channel.WHATSAPP, user, OUR_NUMBER, clock.iso(clock.now()), ACCOUNT
    )
    if rules:
        conversation_records.update(conversation.conversation_id, batching=rules)
    start = time.monotonic()
    for offset, body in fragments:
        time.sleep(max(0.0, start + offset - time.monotonic()))
        form = inbound_form(body, user, OUR_NUMBER, stack.config.twilio_account_sid)
        assert post_webhook(stack.whatsapp_url, form, stack.config.twilio_auth_token).status_code == 200
    wait_quiet(stack, [conversation.conversation_id])
    return run_counts(stack, conversation.conversation_id)


def wait_quiet(stack: LocalStack, conversation_ids: list[str], timeout: float = 120) -> None:
    sfn = stack.client("stepfunctions")
    wanted = set(conversation_ids)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = [
            r
            for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=stack.state_machine_arn)
            for r in page["executions"]
            if r["name"].rsplit("-", 2)[0] in wanted
        ]
        started = {r["name"].rsplit("-", 2)[0] for r in runs}
        pending = sum(len(staged_messages.pending(c)) for c in wanted)
        if started >= wanted and not pending and all(r["status"] != "RUNNING" for r in runs):
            return
        time.sleep(0.3)
    raise TimeoutError("the batches did not finish")


def measure_batches(stack: LocalStack) -> dict:
    happy = batch_run(stack, None, [(0, "hello")])
    stack.openai.inject({"status": 503})
    retried = batch_run(stack, None, [(0, "hello again")])
    quiet = {"mode": "quiet", "quiet_seconds": 3, "typing_gap_seconds": 0, "max_wait_seconds": 60}
    once = batch_run(stack, quiet, [(0, "one")])
    # Each fragment lands during the wait and moves its end: the run waits again.
    extended = batch_run(stack, quiet, [(0, "one"), (2.0, "two"), (4.0, "three")])
    extensions = extended[2] - once[2]
    return {
        "happy": happy,
        "retry": retried,
        "extension_transitions": (extended[0] - once[0]) / extensions,
        "extension_invocations": (extended[1] - once[1]) / extensions,
    }


# --- 3. batching on synthetic typing traces --------------------------------------------


def typing_corpus(bursts: int, seed: int) -> list[list[float]]:
    """Bursts of 1-8 fragments; gaps within a burst from a skewed distribution (most
    under 3 s, some pauses of 5-15 s while the user thinks); bursts far apart."""
    rng = random.Random(seed)
    corpus = []
    for _ in range(bursts):
        size = rng.choices(range(1, 9), weights=[22, 20, 17, 13, 10, 8, 6, 4])[0]
        times = [0.0]
        for _ in range(size - 1):
            gap = rng.lognormvariate(0.3, 0.6) if rng.random() < 0.85 else rng.uniform(5, 15)
            times.append(times[-1] + gap)
        corpus.append(times)
    return corpus


def simulate(rules: BatchingRules | None, corpus: list[list[float]]) -> dict:
    """Replay each burst through the batching rules (debounce.due_ms, with due times met
    to the whole second, as Step Functions waits); a fragment after a batch's due time
    starts the next batch. None: every fragment answered on its own."""
    ai_calls = split = 0
    delays = []
    for burst in corpus:
        ms = [int(t * 1000) for t in burst]
        if rules is None:
            ai_calls += len(ms)
            split += len(ms) > 1
            delays.append(0.0)
            continue
        batches, i = 0, 0
        while i < len(ms):
            opened, last, previous = ms[i], ms[i], None
            i += 1
            while True:
                due = due_ms(rules, opened, last, previous)
                due = opened + -(-(due - opened) // 1000) * 1000  # whole-second waits
                if i < len(ms) and ms[i] < due:
                    previous, last = last, ms[i]
                    i += 1
                    continue
                break
            batches += 1
            answered_at = due
        ai_calls += batches
        split += batches > 1
        delays.append((answered_at - ms[-1]) / 1000)
    return {
        "ai_calls_per_burst": ai_calls / len(corpus),
        "split_share": split / len(corpus),
        "median_delay": statistics.median(delays),
        "p90_delay": statistics.quantiles(delays, n=10)[8],
    }


def measure_batching(bursts: int = 5000) -> list[dict]:
    corpus = typing_corpus(bursts, SEED)
    rows = [{"policy": "no batching", "family": "none", **simulate(None, corpus)}]
    for w in (3, 5, 10, 15, 20):
        rules = BatchingRules(mode="fixed", window_seconds=w, max_wait_seconds=120)
        rows.append(
            {
                "policy": f"fixed W={w}s" + (" (seeds)" if w == 10 else ""),
                "family": "fixed",
                **simulate(rules, corpus),
            }
        )
    for q in (1, 2, 3, 5, 8):
        rules = BatchingRules(
            mode="quiet",
            quiet_seconds=q,
            typing_gap_seconds=2,
            typing_quiet_seconds=q + 2,
            max_wait_seconds=60,
        )
        rows.append({"policy": f"quiet {q}s (typing {q + 2}s)", "family": "quiet", **simulate(rules, corpus)})
    return rows


# --- 4. load ------------------------------------------------------------------------------


def measure_load(stack: LocalStack, conversations: int = 50, per_conversation: int = 8) -> dict:
    users = [f"whatsapp:+1222{i:07d}" for i in range(conversations)]
    errors: list[str] = []

    def converse(user: str) -> None:
        for n in range(per_conversation):
            form = inbound_form(f"{user} #{n}", user, OUR_NUMBER, stack.config.twilio_account_sid)
            for _ in range(20):
                if post_webhook(stack.whatsapp_url, form, stack.config.twilio_auth_token).status_code == 200:
                    break
            else:
                errors.append(user)

    threads = [threading.Thread(target=converse, args=(u,)) for u in users]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sending = time.perf_counter() - started
    conversation_ids = [
        conversation_records.find(Channel.WHATSAPP, u, OUR_NUMBER, ACCOUNT).conversation_id for u in users
    ]
    wait_quiet(stack, conversation_ids, timeout=300)
    answered = time.perf_counter() - started
    inputs = Counter(
        line
        for call in stack.openai.calls
        if call["status"] == 200
        for line in str(call["input"]).split("\n")
    )
    sent = [f"{u} #{n}" for u in users for n in range(per_conversation)]
    return {
        "messages": len(sent),
        "conversations": conversations,
        "messages_per_second": len(sent) / sending,
        "all_answered_seconds": answered,
        "lost": sum(1 for body in sent if inputs[body] == 0) + len(errors),
        "duplicated": sum(n - 1 for body, n in inputs.items() if body in set(sent) and n > 1),
    }


# --- report ---------------------------------------------------------------------------------


def money(value: float) -> str:
    return f"${value:,.2f}"


def report(results: dict) -> tuple[str, str]:
    w, imports, b, load = results["webhook"], results["imports"], results["batches"], results["load"]
    happy_t, happy_l, _ = b["happy"]
    retry_t, retry_l, _ = b["retry"]
    default = next(r for r in results["batching"] if r["policy"].startswith("fixed W=10s"))
    fragments_per_burst = statistics.mean(len(x) for x in typing_corpus(5000, SEED))
    messages_per_batch = fragments_per_burst / default["ai_calls_per_burst"]
    per_1000 = (
        happy_t * 1000 * PRICE_TRANSITION + (happy_l + messages_per_batch) * 1000 * PRICE_LAMBDA_REQUEST
    )
    batches_per_day = 100_000 / messages_per_batch
    sfn_month = batches_per_day * 30 * happy_t * PRICE_TRANSITION
    lambda_month = (batches_per_day * happy_l + 100_000) * 30 * PRICE_LAMBDA_REQUEST
    first_detail = ", ".join(
        f"{k} {v / (w['messages'] / 11):.0f}" for k, v in sorted(w["calls_first_detail"].items())
    )
    rows = [
        ("Webhook: AWS calls, first message of a window", f"{w['calls_first']:.1f} ({first_detail})"),
        ("Webhook: AWS calls, later message in the window", f"{w['calls_later']:.1f}"),
        (
            f"Webhook: handler time per message, median / p99 ({w['messages']} messages)",
            f"{w['median_ms']:.1f} ms / {w['p99_ms']:.1f} ms",
        ),
        (
            "Webhook: median, first / later message",
            f"{w['median_first_ms']:.1f} ms / {w['median_later_ms']:.1f} ms",
        ),
        (
            "Cold import: webhook module / `import boto3` alone",
            f"{imports['webhook_ms']:.0f} ms / {imports['boto3_ms']:.0f} ms",
        ),
        ("Batch, happy path (fixed W): state transitions / Lambda invocations", f"{happy_t} / {happy_l}"),
        ("Batch with one OpenAI retry: transitions / invocations", f"{retry_t} / {retry_l}"),
        (
            "Quiet mode, per extension: transitions / invocations",
            f"{b['extension_transitions']:.1f} / {b['extension_invocations']:.1f}",
        ),
        ("Step Functions + Lambda requests per 1,000 batches", money(per_1000)),
        (
            f"100,000 messages a day ({messages_per_batch:.1f} per batch, W=10 s): Step Functions a month",
            money(sfn_month),
        ),
        ("... Lambda requests a month (webhook and tasks)", money(lambda_month)),
        ("The seeds' estimate for the whole system at 100,000 messages a day", SEEDS_MONTHLY_AT_100K_PER_DAY),
        (
            f"Load: messages per second via the local gateway, {load['conversations']} conversations at once",
            f"{load['messages_per_second']:.1f} ({load['messages']} messages, all answered in "
            f"{load['all_answered_seconds']:.0f} s, lost {load['lost']}, duplicated {load['duplicated']})",
        ),
    ]
    summary = "\n".join(["| Measure | Value |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)])
    batching = "\n".join(
        [
            "| Policy | AI calls per burst | Bursts split | Delay after last fragment, median / p90 |",
            "|---|---|---|---|",
            *(
                f"| {r['policy']} | {r['ai_calls_per_burst']:.2f} | {r['split_share']:.0%} "
                f"| {r['median_delay']:.1f} s / {r['p90_delay']:.1f} s |"
                for r in results["batching"]
            ),
        ]
    )
    return summary, batching


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for family, marker in (("none", "x"), ("fixed", "o"), ("quiet", "s")):
        points = [r for r in rows if r["family"] == family]
        axes.plot(
            [r["median_delay"] for r in points],
            [r["ai_calls_per_burst"] for r in points],
            marker=marker,
            label={"none": "no batching", "fixed": "fixed window W", "quiet": "quiet period"}[family],
        )
        for r in points:
            axes.annotate(
                r["policy"].split(" (")[0], (r["median_delay"], r["ai_calls_per_burst"]), fontsize=7
            )
    axes.set_xlabel("median reply delay after the user's last fragment (s)")
    axes.set_ylabel("AI calls per burst")
    axes.set_title("Batching trade-off on 5,000 synthetic typing bursts")
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> int:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    started = time.perf_counter()
    results: dict[str, Any] = {"imports": measure_imports()}
    counter = AwsCallCounter()
    config = LocalConfig(aws_port=0, gateway_port=0, batch_window_seconds=1, twilio_numbers=(OUR_NUMBER,))
    with LocalStack(config) as stack:
        results["webhook"] = measure_webhook(stack, counter, conversations=100, per_conversation=11)
        results["batches"] = measure_batches(stack)
        results["load"] = measure_load(stack)
    results["batching"] = measure_batching()
    summary, batching = report(results)
    elapsed = time.perf_counter() - started
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(summary)
    print()
    print(batching)
    print(f"\n({elapsed:.0f} s on {machine})")
    docs = ROOT / "docs"
    plot(results["batching"], docs / "benchmarks.png")
    (docs / "benchmarks.md").write_text(
        "# Benchmarks\n\n"
        f"Written by `make bench` on {datetime.now(UTC):%Y-%m-%d} ({machine}; the local stack: moto, our "
        "handlers in-process, stand-ins for OpenAI and Twilio). Timings are this machine's and the "
        "emulator's, not AWS's; counts and prices do not depend on the machine.\n\n"
        "## The webhook, runs and cost\n\n"
        f"{summary}\n\n"
        "Prices: Step Functions Standard $0.025 per 1,000 state transitions, Lambda $0.20 per million "
        "requests (us-east-1 list prices); Lambda duration, DynamoDB on-demand requests and API Gateway "
        "come on top.\n\n"
        "## Batching: delay against AI calls\n\n"
        "5,000 synthetic bursts (1-8 fragments; gaps mostly under 3 s, some 5-15 s pauses), replayed "
        "through the production rule code (`functions/logic/debounce.py`) with whole-second waits.\n\n"
        f"{batching}\n\n"
        "![delay against AI calls](benchmarks.png)\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
