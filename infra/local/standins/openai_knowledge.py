"""The `file_search` tool in the OpenAI stand-in's responses, as OpenAI's file search guide
describes it (https://developers.openai.com/api/docs/guides/tools-file-search): a request
offers `{"type": "file_search", "vector_store_ids": [...], "max_num_results": N}` in its
`tools`; the model searches those vector stores (openai_files.py) and its response's
output holds "a file_search_call output item, which contains the id of the file search
call" and then "a message output item, which contains the response from the model, along
with the file citations". `results` is null unless the request's `include` holds
"file_search_call.results" ("Include the search results of the file search tool call":
the Responses API reference, `include`). `max_num_results` is "between 1 and 50
inclusive" (the reference's FileSearchTool); `max_tool_calls` is "the maximum number of
total calls to built-in tools that can be processed in a response" (same reference).

The stand-in's model searches whenever it may: the request offers `file_search`, its
`tool_choice` allows it (not "none", not a forced function, not `allowed_tools` without
it), `max_tool_calls` is not 0, no queued function call is taken instead, no fault cuts the
response short, and the input has text to search. Its query (`queries`, one) is the input's
`function_call_output` texts, or else its latest user message. It then searches the
completed files of the named stores, by words: a file is split into passages at blank
lines; a passage's score is the share of the query's distinct words of four or more
letters or digits (case-insensitive) that it holds; passages holding none are not results;
the best `max_num_results` (20 if not given, the Assistants' default for gpt-4 models) are,
best first (ties in file and passage order), with `file_id`, `filename`, `score`, `text`
(the passage) and `attributes` (the vector store file's). The search is made even when it
finds nothing: a `file_search_call` with `results` [] (a real model may search and find
nothing too); a request without search makes none.

The reply: the usual text (`You said: <text>`, `Tool said: <output>` lines: openai_tools.py),
then, when the search found something, one more line with the best passage, its runs of
whitespace made single spaces:

    You said: When do you open on Sunday?
    Knowledge said: Sunday opening hours are 10:00 to 16:00.

and the message's text carries a `file_citation` annotation (`file_id`, `filename`, `index`
the end of the text). The results count as input tokens (their words), as retrieved chunks
are billed; `GET /_control/calls` records each request's `vector_store_ids`, `include`,
`max_tool_calls` and `file_searches` (the searches made: 0 or 1; OpenAI bills file search
per tool call).

Refusals, nothing done: `vector_store_ids` missing (400 `missing_required_parameter`), or
`max_num_results` outside 1 to 50 (400 `integer_below_min_value` /
`integer_above_max_value`, OpenAI's usual "Invalid '…': integer below minimum value." form);
a store id the key's project does not hold (never created, deleted, or another project's):
404 "No vector store found with id 'vs_…'.", the vector stores API's answer (OpenAI's
answer to a response naming one is not documented; a 404 is what clients report).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from werkzeug.wrappers import Response

from infra.local.standins.base import Fault
from infra.local.standins.openai_files import FilesStandIn, StoreFile, store_not_found
from infra.local.standins.openai_model import error, item_text, new_id, words

RESULTS = "file_search_call.results"
MIN_RESULTS, MAX_RESULTS, DEFAULT_RESULTS = 1, 50, 20
TERM = re.compile(r"[^\W_]{4,}")
BLANK_LINE = re.compile(r"\n\s*\n")


@dataclass
class Search:
    """The search a response will make when it completes."""

    project: str
    store_ids: list[str]
    max_num_results: int
    include_results: bool
    call: dict[str, Any]  # the recorded request, whose `file_searches` counts it


@dataclass
class Found:
    """What the search adds to a response."""

    items: list[dict[str, Any]]  # the file_search_call
    line: str  # the reply's `Knowledge said:` line, or ""
    tokens: int  # the results' input tokens
    citation: dict[str, Any] | None


class KnowledgeStandIn(FilesStandIn):
    def __init__(self) -> None:
        super().__init__()
        self.searches: dict[str, Search] = {}  # response id → its search

    def _reset(self) -> None:
        super()._reset()
        self.searches.clear()

    def knowledge_refusal(self, body: dict[str, Any], project: str) -> Response | None:
        """Why OpenAI refuses the request's file_search tools."""
        for index, tool in enumerate(body.get("tools") or []):
            if not isinstance(tool, dict) or tool.get("type") != "file_search":
                continue
            where = f"tools[{index}]"
            store_ids = tool.get("vector_store_ids")
            if not isinstance(store_ids, list):
                message = f"Missing required parameter: '{where}.vector_store_ids'."
                return error(400, "missing_required_parameter", message, f"{where}.vector_store_ids")
            if (refused := _results_refusal(where, tool.get("max_num_results"))) is not None:
                return refused
            missing = self.searchable(project, [str(s) for s in store_ids])
            if isinstance(missing, str):
                return store_not_found(missing)
        return None

    def plan_search(self, response_id: str, body: dict[str, Any], project: str, call: dict[str, Any]) -> None:
        """Remember the search the response will make, if it may make one."""
        tools = _file_search_tools(body)
        if not tools or body.get("max_tool_calls") == 0 or not _allowed(body.get("tool_choice")):
            return
        store_ids = store_ids_named(body)
        limit = max(int(tool.get("max_num_results") or DEFAULT_RESULTS) for tool in tools)
        include = RESULTS in (body.get("include") or [])
        with self._lock:
            self.searches[response_id] = Search(project, store_ids, limit, include, call)

    def run_search(self, response: dict[str, Any], inputs: list[dict[str, Any]], fault: Fault) -> Found:
        """The planned search of a completing response, made (or nothing, if it makes none)."""
        with self._lock:
            search = self.searches.pop(response["id"], None)
        query = query_text(inputs)
        if search is None or not query or _cut_short(response, fault):
            return Found([], "", 0, None)
        attached = self.searchable(search.project, search.store_ids)
        results = best_passages(query, attached if isinstance(attached, list) else [], search.max_num_results)
        item = {
            "type": "file_search_call",
            "id": new_id("fs"),
            "status": "completed",
            "queries": [query],
            "results": results if search.include_results else None,
        }
        with self._lock:
            search.call["file_searches"] = 1
        if not results:
            return Found([item], "", 0, None)
        best = results[0]
        citation = {
            "type": "file_citation",
            "file_id": best["file_id"],
            "filename": best["filename"],
            "index": 0,
        }
        line = "Knowledge said: " + " ".join(best["text"].split())
        return Found([item], line, sum(words(r["text"]) for r in results), citation)


def cite(output: list[dict[str, Any]], found: Found) -> None:
    """Put the citation on the reply, when the reply kept the knowledge line."""
    messages = [item for item in output if item.get("type") == "message"]
    if found.citation is None or not messages:
        return
    part = messages[-1]["content"][0]
    if found.line and found.line in part["text"]:
        part["annotations"].append({**found.citation, "index": len(part["text"])})


def with_knowledge(reply: str, found: Found) -> str:
    return f"{reply}\n{found.line}" if found.line else reply


def query_text(inputs: list[dict[str, Any]]) -> str:
    """What the model searches for: the function call outputs' texts, or else the latest
    user message's."""
    outputs = [item_text(item) for item in inputs if item.get("type") == "function_call_output"]
    if outputs:
        return "\n".join(outputs).strip()
    said = [item for item in inputs if item.get("type") == "message" and item.get("role") == "user"]
    return item_text(said[-1]).strip() if said else ""


def best_passages(query: str, attached: list[StoreFile], most: int) -> list[dict[str, Any]]:
    """The passages sharing words with the query, best first, at most `most`."""
    wanted = terms(query)
    scored: list[tuple[int, int, StoreFile, str]] = []
    for attached_file in attached:
        for passage in BLANK_LINE.split(attached_file.file.text or ""):
            shared = len(wanted & terms(passage))
            if shared and passage.strip():
                scored.append((shared, len(scored), attached_file, passage.strip()))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    return [
        {
            "file_id": attached_file.file.id,
            "filename": attached_file.file.filename,
            "score": round(shared / len(wanted), 4),
            "text": passage,
            "attributes": attached_file.attributes,
        }
        for shared, _, attached_file, passage in scored[:most]
    ]


def terms(text: str) -> set[str]:
    return {word.casefold() for word in TERM.findall(text)}


def store_ids_named(body: dict[str, Any]) -> list[str]:
    """The vector store ids the request's file_search tools name."""
    named = [tool.get("vector_store_ids") for tool in _file_search_tools(body)]
    return [str(store) for ids in named if isinstance(ids, list) for store in ids]


def _file_search_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return []
    return [tool for tool in tools if isinstance(tool, dict) and tool.get("type") == "file_search"]


def _allowed(tool_choice: Any) -> bool:
    if tool_choice == "none":
        return False
    if isinstance(tool_choice, dict) and tool_choice.get("type") == "function":
        return False
    if isinstance(tool_choice, dict) and tool_choice.get("type") == "allowed_tools":
        return any(
            t.get("type") == "file_search" for t in tool_choice.get("tools") or [] if isinstance(t, dict)
        )
    return True


def _cut_short(response: dict[str, Any], fault: Fault) -> bool:
    """Whether a fault ends the response without output (see openai_tools.may_call)."""
    limit, reasoning = response.get("max_output_tokens"), int(fault.get("reasoning_tokens") or 0)
    return bool(fault.get("incomplete")) or (limit is not None and reasoning >= int(limit))


def _results_refusal(where: str, value: Any) -> Response | None:
    if value is None:
        return None
    param = f"{where}.max_num_results"
    if not isinstance(value, int) or isinstance(value, bool):
        return error(400, "invalid_type", f"Invalid type for '{param}': expected an integer.", param)
    if value < MIN_RESULTS:
        message = (
            f"Invalid '{param}': integer below minimum value. "
            f"Expected a value >= {MIN_RESULTS}, but got {value} instead."
        )
        return error(400, "integer_below_min_value", message, param)
    if value > MAX_RESULTS:
        message = (
            f"Invalid '{param}': integer above maximum value. "
            f"Expected a value <= {MAX_RESULTS}, but got {value} instead."
        )
        return error(400, "integer_above_max_value", message, param)
    return None
