"""`make bench`: what the system costs and what batching saves, measured in one run so
that ratios hold on a noisy machine. Prints a table and writes docs/benchmarks.md with a
plot (docs/benchmarks.png).

1. Cold starts: each function's handler module imported in a fresh interpreter, side by
   side with `import boto3` alone; and imported from the built asset in a read-only
   directory as Lambda has it, with the bytecode it ships and without
   (tests/support/bench/shipped_bytecode.py).
2. The webhook: AWS calls per message (first of a window, later), handler time.
3. One burst: state transitions, Lambda invocations and their durations, every AWS call
   (webhook and run); an OpenAI retry (checked in the history); a quiet-mode extension.
   Then the full cost per 1,000 bursts at list prices (tests/support/bench/prices.py), and a month
   at 100,000 messages a day against the seeds' estimate.
4. Batching on a seeded corpus of synthetic typing traces: AI calls per burst, bursts
   split, reply delay after the last fragment (the production rule code:
   functions/batching/rules/debounce.py).
5. Load: messages per second through the local gateway and the webhook's answer times
   (median, p99), 20 conversations typing at once (the reconciler running, as deployed).
6. The end of a burst: a quiet-mode burst's reply after its last fragment, over the quiet
   period (tests/support/bench/answer_delay.py).
7. AI calls counted against AI calls made when each call outlasts an attempt once
   (tests/support/bench/counted_calls.py).
8. The input tokens of each AI call along a long conversation, with a context budget and
   without (tests/support/bench/context_budget.py).
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
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")

from boto3.dynamodb.conditions import Key  # noqa: E402

from functions import clock  # noqa: E402
from functions.batching.rules.debounce import BatchingRules, due_ms  # noqa: E402
from functions.config import forget_settings  # noqa: E402
from functions.intake import staged_messages
from functions.intake.inbound import Channel  # noqa: E402
from functions.observability import logger  # noqa: E402
from functions.registry import ALL_FUNCTIONS, BY_NAME, TASKS, WEBHOOK  # noqa: E402
from functions.storage import dynamo  # noqa: E402
from functions.storage.settings import TableSettings  # noqa: E402
from functions.tenancy import conversations as conversation_table  # noqa: E402
from infra.local import lambdas  # noqa: E402
from infra.local.stack import LocalConfig, LocalStack  # noqa: E402
from infra.local.webhooks import inbound_form, post_webhook  # noqa: E402
from tests.support.bench import (  # noqa: E402
    answer_delay,
    context_budget,
    counted_calls,
    population,
    prices,
    shipped_bytecode,
)
from tests.support.costs import AwsCallCounter, run_counts, webhook_event  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
OUR_NUMBER = "whatsapp:+15550009999"
ACCOUNT = LocalConfig.twilio_account_sid  # the local stack's default tenant, which owns OUR_NUMBER
SEED = population.SEED
# Tokens of one AI call, assumed (the stand-in's counts are not a model's): the
# instructions, the conversation so far and the burst in; a short chat reply out.
ASSUMED_INPUT_TOKENS, ASSUMED_OUTPUT_TOKENS = 2_000, 200
# Cold imports against `import boto3`: each function without the OpenAI SDK, and the sum
# over the state machine's functions (docs/adr/0059-models-are-pydantic-models-as-the-design-card.md).
COLD_TARGET_PER_FUNCTION, COLD_TARGET_STATE_MACHINE = 2.0, 18.0


# --- 1. cold starts -----------------------------------------------------------------------


def cold_import_ms(module: str) -> tuple[float, float]:
    """In a fresh interpreter (settings as deployed): how long `import boto3` took, and
    how long importing `module` took from the start, boto3 first (each handler imports
    boto3 before anything else: functions/handlers/__init__.py). Measured in one process,
    the two see the same machine: this one's speed drifts by a third from one second to
    the next, and a ratio of two processes' figures drifted with it."""
    code = (
        "import time; start = time.perf_counter(); import boto3; boto3_done = time.perf_counter(); "
        f"import {module}; print(boto3_done - start, time.perf_counter() - start)"
    )
    env = {**os.environ, **{d.env_var: d.logical_id for d in _tables()}, "EVENT_BUS_NAME": "bench"}
    boto3_s, module_s = map(
        float, subprocess.check_output([sys.executable, "-c", code], cwd=ROOT, env=env).split()
    )
    return boto3_s * 1000, module_s * 1000


def _tables() -> Any:
    from functions.storage.tables import ALL_TABLES

    return ALL_TABLES


def measure_imports(repeat: int = 7) -> dict[str, Any]:
    """Each function's handler module: the median of its cold imports (ms), of boto3's in
    the same interpreters, and of its ratios to boto3's."""
    modules = sorted({f.handler.rpartition(".")[0] for f in ALL_FUNCTIONS})
    by_module, boto3_by_module, ratio_by_module = {}, {}, {}
    for module in modules:
        runs = [cold_import_ms(module) for _ in range(repeat)]
        boto3_by_module[module] = statistics.median(boto3_ms for boto3_ms, _ in runs)
        by_module[module] = statistics.median(module_ms for _, module_ms in runs)
        ratio_by_module[module] = statistics.median(module_ms / boto3_ms for boto3_ms, module_ms in runs)
    return {
        "boto3_ms": statistics.median(boto3_by_module.values()),
        "by_module": by_module,
        "boto3_by_module": boto3_by_module,
        "ratio_by_module": ratio_by_module,
    }


# --- 2. the webhook -----------------------------------------------------------------------


# The webhook section keeps every window open while it runs (its runs wait, parked): both
# the window and the longest wait, which caps it, are set long.
LONG_WINDOWS = {"BATCH_WINDOW_SECONDS": "600", "MAX_WAIT_SECONDS": "600"}  # the rules allow 600 s at most


@contextmanager
def long_windows() -> Iterator[None]:
    """The functions' settings with LONG_WINDOWS, as they were afterwards."""
    before = {name: os.environ.get(name) for name in LONG_WINDOWS}
    os.environ.update(LONG_WINDOWS)
    forget_settings()
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        forget_settings()


WARM_UP_SENDER = "whatsapp:+14449999999"


def _senders(users: int) -> list[str]:
    return [f"whatsapp:+1444{i:07d}" for i in range(users)]


def _remove_parked_conversations(senders: list[str]) -> None:
    """The webhook section leaves its conversations in 600 s windows, every run parked and
    every message pending, which the reconciler would look at every 10 s through the
    sections after it (a load of its own, not theirs): their staged messages and windows
    are removed. Their runs stay parked until the stack stops: moto's StopExecution leaves
    a run that waits for its task token RUNNING (and failing with a States.Runtime error
    of moto's own if the token is then completed)."""
    found = (conversation_table.find(Channel.WHATSAPP, s, OUR_NUMBER, ACCOUNT) for s in senders)
    ids = {c.conversation_id for c in found if c is not None}
    settings = TableSettings.get()
    staged, windows = dynamo.table(settings.staged_messages_table), dynamo.table(settings.batch_windows_table)
    with staged.batch_writer() as staged_batch, windows.batch_writer() as windows_batch:
        for conversation_id in ids:
            windows_batch.delete_item(Key={"conversation_id": conversation_id})
            keys = dynamo.all_items(
                staged.query,
                KeyConditionExpression=Key("conversation_id").eq(conversation_id),
                ProjectionExpression="conversation_id, message_sid",
            )
            for key in keys:
                staged_batch.delete_item(Key=key)


def _webhook_rounds(
    stack: LocalStack, counter: AwsCallCounter, users: int, per_user: int
) -> tuple[dict[str, list[float]], dict[str, Counter[str]]]:
    senders = _senders(users)
    for sender in senders:
        conversation_table.create(Channel.WHATSAPP, sender, OUR_NUMBER, clock.iso(clock.now()), ACCOUNT)
    lambdas.invoke("Webhook", webhook_event(stack, WARM_UP_SENDER, OUR_NUMBER, "warm-up"))
    times: dict[str, list[float]] = {"first": [], "later": []}
    calls: dict[str, Counter[str]] = {"first": Counter(), "later": Counter()}
    for round_number in range(per_user):
        kind = "first" if round_number == 0 else "later"
        for sender in senders:
            event = webhook_event(stack, sender, OUR_NUMBER, f"fragment {round_number}")
            started = time.perf_counter()
            (result, error), made = counter.measure(lambda e=event: lambdas.invoke("Webhook", e))
            times[kind].append((time.perf_counter() - started) * 1000)
            assert error is None and result["statusCode"] == 200, f"the webhook failed: {result}"
            calls[kind].update(made)
    return times, calls


def measure_webhook(stack: LocalStack, counter: AwsCallCounter, users: int, per_user: int) -> dict:
    """Handler time and AWS calls per message; the first message of each conversation
    opens its window, the others land in the open window (long windows keep it open)."""
    with long_windows():
        times, calls = _webhook_rounds(stack, counter, users, per_user)
    _remove_parked_conversations([*_senders(users), WARM_UP_SENDER])
    everything = times["first"] + times["later"]
    return {
        "messages": len(everything),
        "calls_first": sum(calls["first"].values()) / len(times["first"]),
        "calls_later": sum(calls["later"].values()) / len(times["later"]),
        "calls_first_detail": {k: v / len(times["first"]) for k, v in sorted(calls["first"].items())},
        "median_ms": statistics.median(everything),
        "p99_ms": statistics.quantiles(everything, n=100)[98],
    }


# --- 3. one burst -------------------------------------------------------------------------


class TimedLambdas:
    """Wraps the local Lambda runtime to record each invocation's duration."""

    def __init__(self) -> None:
        self.durations: list[tuple[str, float]] = []
        self._invoke = lambdas.invoke

    def __enter__(self) -> TimedLambdas:
        def timed(name: str, payload: Any) -> Any:
            started = time.perf_counter()
            try:
                return self._invoke(name, payload)
            finally:
                self.durations.append((name.rsplit(":", 1)[-1], time.perf_counter() - started))

        lambdas.invoke = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        lambdas.invoke = self._invoke  # type: ignore[assignment]

    def gb_seconds(self) -> float:
        """Billed GB-seconds: each duration rounded up to the millisecond, times memory."""
        return sum(-(-s * 1000 // 1) / 1000 * BY_NAME[n].memory_mb / 1024 for n, s in self.durations)


def burst(stack: LocalStack, rules: dict | None, fragments: list[tuple[float, str]]) -> str:
    """Send `fragments` (offset, body) over HTTP for a new conversation with `rules`,
    wait until it is answered; the conversation's id."""
    user = f"whatsapp:+1333{random.randrange(10**7):07d}"
    conversation = conversation_table.create(
        Channel.WHATSAPP, user, OUR_NUMBER, clock.iso(clock.now()), ACCOUNT
    )
    if rules:
        conversation_table.update(conversation.conversation_id, batching=rules)
    start = time.monotonic()
    for offset, body in fragments:
        time.sleep(max(0.0, start + offset - time.monotonic()))
        form = inbound_form(body, user, OUR_NUMBER, stack.config.twilio_account_sid)
        assert post_webhook(stack.whatsapp_url, form, stack.config.twilio_auth_token).status_code == 200
    wait_quiet(stack, [conversation.conversation_id])
    return conversation.conversation_id


def regenerated_burst(stack: LocalStack) -> str:
    """A burst whose reply is discarded once (`on_newer: merge`): a second fragment sent
    while the first one's reply is generated (the OpenAI stand-in slowed to 3 s)."""
    user = f"whatsapp:+1333{random.randrange(10**7):07d}"
    conversation = conversation_table.create(
        Channel.WHATSAPP, user, OUR_NUMBER, clock.iso(clock.now()), ACCOUNT
    )
    conversation_table.update(conversation.conversation_id, batching={"on_newer": "merge"})
    asked = len(stack.openai.calls)
    stack.openai.inject({"delay": 3})
    for body in ("hello", "one more thing"):
        form = inbound_form(body, user, OUR_NUMBER, stack.config.twilio_account_sid)
        assert post_webhook(stack.whatsapp_url, form, stack.config.twilio_auth_token).status_code == 200
        deadline = time.monotonic() + 30
        while len(stack.openai.calls) == asked:  # the reply is being generated
            assert time.monotonic() < deadline, "the reply was never asked for"
            time.sleep(0.05)
    wait_quiet(stack, [conversation.conversation_id])
    return conversation.conversation_id


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


def measure_bursts(stack: LocalStack, counter: AwsCallCounter) -> dict:
    fragments = [(0, "hello"), (0.2, "my order"), (0.4, "has not arrived")]
    with TimedLambdas() as timed:
        conversation_id, made = counter.measure(lambda: burst(stack, None, fragments), all_threads=True)
    happy = run_counts(stack, conversation_id)
    calls = Counter({k: v for k, v in made.items() if not k.startswith("lambda:")})
    calls["dynamodb:Query"] += 1  # Query Staged Messages: a direct integration, inside the emulator
    items = Counter(counter.dynamodb_items)
    items["Query"] += 1
    measured = prices.Burst(
        messages=len(fragments),
        transitions=happy.transitions,
        lambda_invocations=happy.lambda_invocations,
        lambda_gb_seconds=timed.gb_seconds(),
        aws_calls=calls,
        dynamodb_items=items,
    )
    stack.openai.inject({"status": 503})
    retried_id = burst(stack, None, [(0, "hello again")])
    retried = run_counts(stack, retried_id)
    failures = [
        e["taskFailedEventDetails"]["error"]
        for page in _histories(stack, retried_id)
        for e in page
        if e["type"] == "TaskFailed"
    ]
    # The fault goes to the next OpenAI call, whoever makes it: no other run may be
    # answering now (the webhook section's runs are parked in their long windows).
    assert len(failures) == 1, f"the injected OpenAI error did not cause exactly one retry: {failures}"
    quiet = {"mode": "quiet", "quiet_seconds": 2, "typing_gap_seconds": 0, "max_wait_seconds": 60}
    once = run_counts(stack, burst(stack, quiet, [(0, "one")]))
    # Each fragment lands during the wait and moves its end: the run waits again.
    extended = run_counts(stack, burst(stack, quiet, [(0, "one"), (1.5, "two"), (3.0, "three")]))
    extensions = extended.extensions - once.extensions
    regenerated = run_counts(stack, regenerated_burst(stack))
    assert regenerated.regenerations == 1, f"the newer fragment did not discard the reply once: {regenerated}"
    return {
        "regenerated": regenerated,
        "happy": happy,
        "measured": measured,
        "functions": sorted({name for name, _ in timed.durations if name != WEBHOOK.logical_id}),
        "retry": retried,
        "extension_transitions": (extended.transitions - once.transitions) / extensions,
        "extension_invocations": (extended.lambda_invocations - once.lambda_invocations) / extensions,
    }


def _histories(stack: LocalStack, conversation_id: str) -> list[list[dict[str, Any]]]:
    sfn = stack.client("stepfunctions")
    runs = sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"]
    return [
        sfn.get_execution_history(executionArn=r["executionArn"], maxResults=1000)["events"]
        for r in runs
        if r["name"].startswith(conversation_id + "-")
    ]


# --- 4. batching on synthetic typing traces --------------------------------------------


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


# --- 5. load ------------------------------------------------------------------------------


def measure_load(stack: LocalStack, conversations: int = 20, per_conversation: int = 10) -> dict:
    """`conversations` users typing at once, each message as soon as the last is answered:
    the webhook's answer times over HTTP, and how long until every burst is answered."""
    users = [f"whatsapp:+1222{i:07d}" for i in range(conversations)]
    errors: list[str] = []
    answer_times: list[float] = []
    refused: list[int] = []  # the statuses other than 200

    def converse(user: str) -> None:
        for n in range(per_conversation):
            form = inbound_form(f"{user} #{n}", user, OUR_NUMBER, stack.config.twilio_account_sid)
            for _ in range(20):
                sent = time.perf_counter()
                status = post_webhook(stack.whatsapp_url, form, stack.config.twilio_auth_token).status_code
                answer_times.append(time.perf_counter() - sent)
                if status == 200:
                    break
                refused.append(status)
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
        conversation_table.find(Channel.WHATSAPP, u, OUR_NUMBER, ACCOUNT).conversation_id for u in users
    ]
    wait_quiet(stack, conversation_ids, timeout=300)
    answered = time.perf_counter() - started
    # What each OpenAI conversation holds (a reply discarded for newer fragments is removed
    # from it; on_newer: merge): every message once, in one user turn.
    inputs = Counter(
        line for conversation_id in conversation_ids for line in _user_turn_lines(stack, conversation_id)
    )
    sent = [f"{u} #{n}" for u in users for n in range(per_conversation)]
    return {
        "messages": len(sent),
        "conversations": conversations,
        "messages_per_second": len(sent) / sending,
        "all_answered_seconds": answered,
        "webhook_p50_s": statistics.median(answer_times),
        "webhook_p99_s": statistics.quantiles(answer_times, n=100)[98],
        "webhook_max_s": max(answer_times),
        "refused": len(refused),
        "lost": sum(1 for body in sent if inputs[body] == 0) + len(errors),
        "duplicated": sum(n - 1 for body, n in inputs.items() if body in set(sent) and n > 1),
    }


def _user_turn_lines(stack: LocalStack, conversation_id: str) -> list[str]:
    """The lines of every user turn the conversation's OpenAI conversation holds."""
    openai_conversation = conversation_table.require(conversation_id).openai_conversation_id
    if not openai_conversation:
        return []
    items = stack.openai.conversation_items(openai_conversation)
    return [
        line for item in items if item["role"] == "user" for line in item["content"][0]["text"].split("\n")
    ]


# --- report ---------------------------------------------------------------------------------


def _detail(calls: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f}" for k, v in calls.items())


def money(value: float, digits: int = 2) -> str:
    return f"${value:,.{digits}f}"


def _cold_import_row(imports: dict[str, Any], function: str, module: str) -> tuple[str, str]:
    return (
        f"Cold import, {function} ({module})",
        f"{imports['by_module'][module]:.0f} ms (boto3 {imports['boto3_by_module'][module]:.0f} ms "
        f"in the same interpreters), {imports['ratio_by_module'][module]:.2f}× boto3"
        + ("" if function == "GenerateReply" else f" (target ≤ {COLD_TARGET_PER_FUNCTION}×)"),
    )


def report(results: dict) -> tuple[str, str]:
    w, imports, b, load = results["webhook"], results["imports"], results["bursts"], results["load"]
    boto3_ms = imports["boto3_ms"]
    happy, retry, measured = b["happy"], b["retry"], b["measured"]
    per_burst = prices.aws_cost(measured)
    aws_per_burst = sum(per_burst.values())
    ai = prices.ai_cost(ASSUMED_INPUT_TOKENS, ASSUMED_OUTPUT_TOKENS)
    # A month at 100,000 messages a day, in bursts like the measured one.
    batches_per_month = 100_000 / measured.messages * 30
    month = {k: v * batches_per_month for k, v in per_burst.items()}
    touched = [WEBHOOK.logical_id, *b["functions"]]
    module_of = {f.logical_id: f.handler.rpartition(".")[0] for f in ALL_FUNCTIONS}
    ms, ratio = imports["by_module"], imports["ratio_by_module"]
    cold_sum, cold_ratio = (sum(figures[module_of[f]] for f in touched) for figures in (ms, ratio))
    machine_sum, machine_ratio = (
        sum(figures[module_of[f.logical_id]] for f in TASKS) for figures in (ms, ratio)
    )
    machine_gb = sum(f.memory_mb for f in TASKS) / 1024
    snapstart_month, snapstart_restores = prices.snapstart_cost(machine_gb, 30 * 86400, 1000)
    rows = [
        (
            "Burst, answered (fixed or quiet, no extension): state transitions / Lambda invocations",
            f"{happy.transitions} / {happy.lambda_invocations}",
        ),
        (
            "Burst with one OpenAI retry (checked in the history): transitions / invocations",
            f"{retry.transitions} / {retry.lambda_invocations}",
        ),
        (
            "Burst with one reply discarded for a newer fragment: transitions / invocations",
            f"{b['regenerated'].transitions} / {b['regenerated'].lambda_invocations}"
            f" (+{b['regenerated'].transitions - happy.transitions}"
            f" / +{b['regenerated'].lambda_invocations - happy.lambda_invocations})",
        ),
        (
            "Quiet mode, per extension: transitions / invocations",
            f"{b['extension_transitions']:.1f} / {b['extension_invocations']:.1f}",
        ),
        answer_delay.row(results["answer_delay"]),
        counted_calls.row(results["counted_calls"]),
        *context_budget.rows(results["context_budget"]),
        (
            "Webhook: AWS calls, first message of a window",
            f"{w['calls_first']:.1f} ({_detail(w['calls_first_detail'])})",
        ),
        ("Webhook: AWS calls, later message in the window", f"{w['calls_later']:.1f}"),
        (
            f"Webhook: handler time per message, median / p99 ({w['messages']} messages, local emulator)",
            f"{w['median_ms']:.1f} ms / {w['p99_ms']:.1f} ms",
        ),
        (
            "Cold import, `import boto3` alone (median over every function's interpreters)",
            f"{boto3_ms:.0f} ms",
        ),
        *(_cold_import_row(imports, f.logical_id, module_of[f.logical_id]) for f in (WEBHOOK, *TASKS)),
        (
            f"The state machine's {len(TASKS)} functions: sum of their cold imports",
            f"{machine_sum:.0f} ms, {machine_ratio:.1f}× boto3 (target ≤ {COLD_TARGET_STATE_MACHINE}×)",
        ),
        (
            f"Functions one burst touches: {len(touched)}; sum of their cold imports",
            f"{cold_sum:.0f} ms, {cold_ratio:.1f}× boto3",
        ),
        *shipped_bytecode.rows(results["bytecode"]),
        *(
            (f"AWS per 1,000 bursts of {measured.messages} messages: {k}", money(v * 1000, 4))
            for k, v in per_burst.items()
        ),
        (f"AWS per 1,000 bursts of {measured.messages} messages: total", money(aws_per_burst * 1000, 3)),
        (
            f"OpenAI {prices.OPENAI_MODEL_PRICED} per burst ({ASSUMED_INPUT_TOKENS:,} tokens in, "
            f"{ASSUMED_OUTPUT_TOKENS} out, assumed)",
            money(ai, 5),
        ),
        (
            "Twilio per reply: WhatsApp (Twilio's fee) / SMS (one US segment)",
            f"{money(prices.TWILIO_WHATSAPP_PER_MESSAGE, 4)} / {money(prices.TWILIO_SMS_US_PER_SEGMENT, 4)}",
        ),
        (
            f"100,000 messages a day ({measured.messages} per burst): AWS a month",
            money(sum(month.values()) + prices.waf_monthly()),
        ),
        ("... of which Step Functions", money(month["Step Functions"])),
        (
            f"... of which WAF: the web ACL and its {prices.WAF_RULES} rate rule (fixed) / "
            "the requests it inspects",
            f"{money(prices.waf_monthly())} / {money(month['WAF requests'])}",
        ),
        (
            f"SnapStart on the state machine's {len(TASKS)} functions ({machine_gb:.2f} GB, not enabled): "
            "snapshots cached a month / 1,000 restores of each",
            f"{money(snapstart_month)} / {money(snapstart_restores)}",
        ),
        (
            "... OpenAI a month at the assumed tokens / Twilio WhatsApp replies a month",
            f"{money(ai * batches_per_month)} / "
            f"{money(prices.TWILIO_WHATSAPP_PER_MESSAGE * batches_per_month)}",
        ),
        (
            "The seeds' estimate for the whole system at 100,000 messages a day",
            prices.SEEDS_MONTHLY_AT_100K_PER_DAY,
        ),
        (
            f"Load: messages per second via the local gateway, {load['conversations']} conversations at once",
            f"{load['messages_per_second']:.1f} ({load['messages']} messages, all answered in "
            f"{load['all_answered_seconds']:.0f} s, lost {load['lost']}, duplicated {load['duplicated']})",
        ),
        (
            f"Load: the webhook's answer over HTTP, {load['conversations']} conversations at once, "
            "median / p99 / max (targets: 1 s / 5 s; Twilio waits 15 s)",
            f"{load['webhook_p50_s']:.2f} s / {load['webhook_p99_s']:.2f} s / {load['webhook_max_s']:.2f} s "
            f"({load['refused']} answered other than 200)",
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
    logging.getLogger("moto").setLevel(logging.ERROR)  # a task's failure, injected, is in the figures
    started = time.perf_counter()
    results: dict[str, Any] = {"imports": measure_imports(), "bytecode": shipped_bytecode.measure()}
    counter = AwsCallCounter.installed()
    # The reconciler runs as the deployed schedule does: a run that the emulator's load
    # pushed past a function's timeout is retried, as on AWS.
    os.environ["RECONCILE_AFTER_SECONDS"] = "10"
    config = LocalConfig(
        aws_port=0,
        gateway_port=0,
        batch_window_seconds=1,
        twilio_numbers=(OUR_NUMBER,),
        reconcile_every_seconds=10,
    )
    with LocalStack(config) as stack:
        results["webhook"] = measure_webhook(stack, counter, users=100, per_user=11)
        results["bursts"] = measure_bursts(stack, counter)
        results["answer_delay"] = answer_delay.measure_answer_delay(stack, OUR_NUMBER)
        results["counted_calls"] = counted_calls.measure_counted_calls(stack)
        results["context_budget"] = context_budget.measure_context_budget(stack)
        results["load"] = measure_load(stack)
        # Runs still parked when the stack stops cannot reach it any more: not a finding.
        logger.setLevel(logging.CRITICAL)
    results["batching"] = measure_batching()
    summary, batching = report(results)
    by_person, by_person_verdict = population.section(ROOT / "docs" / "benchmarks-adaptive.png")
    elapsed = time.perf_counter() - started
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(summary)
    print()
    print(batching)
    print()
    print(by_person)
    print(by_person_verdict)
    print(f"\n({elapsed:.0f} s on {machine}; prices as of {prices.PRICES_AS_OF})")
    docs = ROOT / "docs"
    plot(results["batching"], docs / "benchmarks.png")
    (docs / "benchmarks.md").write_text(
        "# Benchmarks\n\n"
        f"Written by `make bench` on {datetime.now(UTC):%Y-%m-%d} ({machine}; the local stack: moto, our "
        "handlers in-process, stand-ins for OpenAI and Twilio). Timings are this machine's and the "
        "emulator's, not AWS's (Lambda durations, and so their cost, are the local handlers' times); "
        "counts do not depend on the machine.\n\n"
        "## Runs, the webhook, cold starts and cost\n\n"
        f"{summary}\n\n"
        f"Prices (tests/support/bench/prices.py), us-east-1 list prices as of {prices.PRICES_AS_OF}: "
        "Step Functions Standard $0.025 per 1,000 state transitions; Lambda arm64 $0.20 per million "
        "requests and $0.0000133334 per GB-second; DynamoDB on-demand $0.625 per million write and "
        "$0.125 per million read request units; API Gateway REST $3.50 per million requests; AWS WAF "
        "$5.00 per web ACL and $1.00 per rule a month and $0.60 per million requests; Secrets "
        "Manager $0.05 per 10,000 calls; EventBridge $1.00 per million events; OpenAI gpt-6.1-terra "
        "$1.00 / $5.00 per million input / output tokens; Twilio $0.005 per WhatsApp message (Meta "
        "charges nothing for a reply within 24 hours of the user's message), $0.0083 per US SMS "
        "segment.\n\n"
        "## Batching: delay against AI calls\n\n"
        "5,000 synthetic bursts (1-8 fragments; gaps mostly under 3 s, some 5-15 s pauses), replayed "
        "through the production rule code (`functions/batching/rules/debounce.py`) with whole-second "
        "waits.\n\n"
        f"{batching}\n\n"
        "![delay against AI calls](benchmarks.png)\n\n"
        "## Batching by person: adaptive against fixed and quiet\n\n"
        f"{population.description()}\n\n"
        f"{by_person}\n\n{by_person_verdict}\n\n"
        "![adaptive against fixed and quiet](benchmarks-adaptive.png)\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
